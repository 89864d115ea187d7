use clap::Parser;
use randomsecret::cli::{Cli, Command, ControllerArgs, LogFormat};
use randomsecret::{api, gitops, manifests, runtime};
use std::io::{IsTerminal, Read};
use std::process::ExitCode;

// jemalloc, for the glibc release binary and the musl image alike: measured
// by `make bench` against glibc's malloc (README, Memory), it keeps less
// memory after bursts and restarts, and musl's own malloc is slow.
#[cfg(not(target_env = "msvc"))]
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

/// jemalloc's options, read at its start: freed pages go back to the
/// operating system within a second (by a background thread, so an idle
/// controller shrinks too), and two arenas for the runtime's few threads.
#[cfg(not(target_env = "msvc"))]
#[allow(non_upper_case_globals)]
#[unsafe(export_name = "_rjem_malloc_conf")]
pub static malloc_conf: &u8 =
    &b"background_thread:true,dirty_decay_ms:1000,muzzy_decay_ms:0,narenas:2\0"[0];

fn init_logging(args: &ControllerArgs) {
    let filter = tracing_subscriber::EnvFilter::try_new(&args.log_level).unwrap_or_else(|e| {
        eprintln!(
            "randomsecret: invalid --log-level {:?} ({e}); using info",
            args.log_level
        );
        tracing_subscriber::EnvFilter::new("info")
    });
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal());
    match args.log_format {
        LogFormat::Json => builder.json().init(),
        LogFormat::Text => builder.init(),
    }
}

/// The YAML to read: at most `gitops::yaml::MAX_INPUT` bytes, UTF-8.
fn read_input(file: Option<&std::path::Path>) -> Result<String, String> {
    let (what, reader): (String, Box<dyn Read>) = match file {
        None => ("standard input".into(), Box::new(std::io::stdin())),
        Some(p) if p.as_os_str() == "-" => ("standard input".into(), Box::new(std::io::stdin())),
        Some(p) => (
            p.display().to_string(),
            Box::new(std::fs::File::open(p).map_err(|e| format!("reading {}: {e}", p.display()))?),
        ),
    };
    // One byte past the limit is enough to know it is too big.
    let mut bytes = Vec::new();
    reader
        .take(gitops::yaml::MAX_INPUT as u64 + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| format!("reading {what}: {e}"))?;
    gitops::yaml::check_size(bytes.len()).map_err(|e| format!("{what}: {e}"))?;
    String::from_utf8(bytes).map_err(|e| {
        let utf16 = matches!(e.as_bytes(), [0xFF, 0xFE, ..] | [0xFE, 0xFF, ..]);
        format!(
            "{what} is not UTF-8 (invalid byte at {}){}",
            e.utf8_error().valid_up_to(),
            if utf16 {
                ": it is UTF-16; convert it to UTF-8"
            } else {
                ""
            }
        )
    })
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result: Result<(), String> = match cli.command {
        Command::Controller(args) => {
            init_logging(&args);
            let rt = tokio::runtime::Builder::new_multi_thread()
                .enable_all()
                .build()
                .expect("tokio runtime");
            rt.block_on(runtime::run(*args))
                .map_err(|e| format!("{e:#}"))
        }
        Command::Crd { dir: None } => {
            print!("{}", api::crd_yaml());
            Ok(())
        }
        Command::Crd { dir: Some(dir) } => api::crds().iter().try_for_each(|(name, crd)| {
            std::fs::write(dir.join(name), api::crd_file_yaml(crd))
                .map_err(|e| format!("{}: {e}", dir.join(name).display()))
        }),
        Command::Name { file } => read_input(file.as_deref()).and_then(|input| {
            let names = manifests::versioned_names(&input).map_err(|e| e.to_string())?;
            names.iter().for_each(|n| println!("{n}"));
            Ok(())
        }),
        Command::Resolve { file } => read_input(file.as_deref()).and_then(|input| {
            let (out, _) = gitops::resolve_stream(&input).map_err(|e| e.to_string())?;
            print!("{out}");
            Ok(())
        }),
        Command::Kustomize => read_input(None).and_then(|input| {
            let out = gitops::krm_function(&input).map_err(|e| e.to_string())?;
            print!("{}", out.list);
            match out.error {
                // The KRM functions spec: errors on stderr, a non-zero exit;
                // the ResourceList with the error in its results on stdout.
                Some(e) => Err(e),
                None if out.changed == 0 => {
                    eprintln!(
                        "randomsecret kustomize: no reference was rewritten (no RandomSecret here, or nothing references its base name)"
                    );
                    Ok(())
                }
                None => Ok(()),
            }
        }),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("randomsecret: {e}");
            ExitCode::FAILURE
        }
    }
}
