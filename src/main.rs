use clap::{CommandFactory, FromArgMatches};
use randomsecret::cli::terminal::clean;
use randomsecret::cli::{
    Cli, Command, ControllerArgs, InputArgs, LogFormat, ReleaseArgs, RotateArgs, StatusArgs,
    StatusOutput, input,
};
use randomsecret::views::{fetch, render};
use randomsecret::{api, controller, gitops, manifests, runtime};
use std::io::IsTerminal;
use std::io::Write;
use std::process::ExitCode;

// jemalloc, for the static glibc binary (the release archive and the image
// ship the same one): measured by `make bench` against glibc's malloc
// (docs/src/benchmarks.md#memory), it keeps less memory after bursts and restarts, and
// musl's own malloc, for anyone building for musl, is slow.
#[cfg(not(target_env = "msvc"))]
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

/// jemalloc's options, read at its start: freed pages go back to the
/// operating system within a second (by a background thread, so an idle
/// controller shrinks too); one arena, and thread caches for small sizes
/// only, since the runtime's few threads contend little and every arena and
/// cache keeps partly used pages of its own (1 MiB less at 10,000 objects,
/// docs/src/benchmarks.md#memory).
#[cfg(not(target_env = "msvc"))]
#[allow(non_upper_case_globals)]
#[unsafe(export_name = "_rjem_malloc_conf")]
pub static malloc_conf: &u8 =
    &b"background_thread:true,dirty_decay_ms:1000,muzzy_decay_ms:0,narenas:1,tcache_max:4096\0"[0];

fn init_logging(args: &ControllerArgs) {
    let filter = runtime::logging::filter(&args.log_level).unwrap_or_else(|e| {
        eprintln!(
            "randomsecret: invalid --log-level {:?} ({e}); using info",
            args.log_level
        );
        runtime::logging::filter("info").expect("a valid filter")
    });
    use tracing_subscriber::prelude::*;
    let fmt = tracing_subscriber::fmt::layer()
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal());
    // The log level filters the log lines alone: the phase spans are timed
    // at any level.
    let logs = match args.log_format {
        LogFormat::Json => fmt.json().with_filter(filter).boxed(),
        LogFormat::Text => fmt.with_filter(filter).boxed(),
    };
    tracing_subscriber::registry()
        .with(logs)
        .with(runtime::phases::layer())
        .init();
}

/// `randomsecret name`: each source checked alone (an error names it), a
/// base name in two sources refused, then every name in order.
fn name(args: InputArgs, explain: bool) -> Result<(), String> {
    let sources = input::sources(&args.files, args.recursive)?;
    let streams = sources
        .iter()
        .map(|s| gitops::yaml::read_documents(&s.text).map_err(|e| s.error(e.into())))
        .collect::<Result<Vec<_>, _>>()?;
    let shown: Vec<String> = sources.iter().map(input::Source::shown).collect();
    let found =
        manifests::random_secrets_across(&streams, &shown).map_err(|(i, e)| sources[i].error(e))?;
    if !explain {
        found
            .iter()
            .flatten()
            .for_each(|f| println!("{}", clean(&f.version.secret_name)));
        return Ok(());
    }
    for s in &sources {
        let text = gitops::explain::explain_stream(&s.text).map_err(|e| s.error(e))?;
        print!("{}", clean(&text));
    }
    Ok(())
}

/// `randomsecret resolve`: every source's references resolved against the
/// RandomSecrets of all of them, written as one stream.
fn resolve(args: InputArgs, references: &[String]) -> Result<(), String> {
    let custom = randomsecret::references::custom::parse_all(references)?;
    let sources = input::sources(&args.files, args.recursive)?;
    let texts: Vec<&str> = sources.iter().map(|s| s.text.as_str()).collect();
    let shown: Vec<String> = sources.iter().map(input::Source::shown).collect();
    let (outs, _) = gitops::resolve::resolve_sources(&texts, &shown, &custom)
        .map_err(|(i, e)| sources[i].error(e))?;
    for note in gitops::resolve::notes_of(&texts) {
        eprintln!("randomsecret resolve: note: {note}");
    }
    print!("{}", input::joined(&outs));
    Ok(())
}

/// kubectl runs a plugin as `kubectl-<name>` from PATH: installed under that
/// name (a symlink or a copy), the binary is `kubectl randomsecret`.
fn parse_cli() -> Cli {
    let invoked = std::env::args_os()
        .next()
        .map(std::path::PathBuf::from)
        .and_then(|p| Some(p.file_name()?.to_string_lossy().into_owned()));
    let mut command = Cli::command();
    if invoked.is_some_and(|n| n.starts_with("kubectl-randomsecret")) {
        command = command.bin_name("kubectl randomsecret");
    }
    let matches = command.get_matches();
    Cli::from_arg_matches(&matches).unwrap_or_else(|e| e.exit())
}

/// `randomsecret status`: read, render, and with --watch again on each change.
async fn status(args: StatusArgs) -> anyhow::Result<()> {
    let client = fetch::client(args.kubeconfig.as_deref(), args.context.as_deref()).await?;
    let scope = fetch::Scope {
        namespace: if args.all_namespaces {
            None
        } else {
            Some(
                args.namespace
                    .clone()
                    .unwrap_or_else(|| client.default_namespace().to_string()),
            )
        },
        name: args.name.clone(),
    };
    let terminal = std::io::stdout().is_terminal();
    let colour = terminal && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty());
    let draw = |list: &randomsecret::views::StatusList| -> std::io::Result<()> {
        let text = match args.output {
            StatusOutput::Tree => render::tree(list, k8s_openapi::jiff::Timestamp::now(), colour),
            StatusOutput::Json => render::json(list),
            StatusOutput::Yaml => render::yaml(list),
        };
        let mut out = std::io::stdout().lock();
        if args.watch {
            if terminal {
                // Redraw in place: cursor home, clear the screen.
                out.write_all(b"\x1b[H\x1b[2J")?;
            } else if args.output == StatusOutput::Yaml {
                out.write_all(b"---\n")?;
            }
        }
        out.write_all(text.as_bytes())?;
        out.flush()
    };
    if args.watch {
        fetch::watch(&client, &scope, args.interval, draw).await
    } else {
        match draw(&fetch::status(&client, &scope, fetch::Freshness::Consistent).await?) {
            Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
            r => Ok(r?),
        }
    }
}

/// `randomsecret release-finalizers`: let go of the versions' finalizer
/// (after an uninstall), or with --dry-run list what holds it.
fn release_finalizers(args: ReleaseArgs) -> Result<(), String> {
    let run = async {
        let client = fetch::client(args.kubeconfig.as_deref(), args.context.as_deref()).await?;
        let ns = (!args.all_namespaces).then(|| {
            args.namespace
                .clone()
                .unwrap_or_else(|| client.default_namespace().to_string())
        });
        let released = randomsecret::release::release(&client, ns.as_deref(), args.dry_run).await?;
        let verb = if args.dry_run { "holds" } else { "released" };
        for s in &released {
            println!("secret/{s} {verb} {}", randomsecret::api::FINALIZER_IN_USE);
        }
        eprintln!(
            "randomsecret release-finalizers: {} Secret(s){}",
            released.len(),
            if args.dry_run {
                " would be released (dry run)"
            } else {
                " released"
            }
        );
        anyhow::Ok(())
    };
    block_on(run)
}

/// `randomsecret rotate`: print the change, or send it.
fn rotate(args: RotateArgs) -> Result<(), String> {
    use randomsecret::rotate;
    let token = args
        .to
        .clone()
        .unwrap_or_else(|| rotate::token(k8s_openapi::jiff::Timestamp::now()));
    let key = args.key.as_deref();
    let what = match key {
        None => "rotation".to_string(),
        Some(k) => format!("keys.{k}.rotation"),
    };
    let single = args.name.clone().filter(|_| !args.dry_run);
    if let Some(name) = &single
        && args.print
    {
        print!("{}", rotate::print(key, &token));
        eprintln!(
            "randomsecret rotate: commit this to RandomSecret {name}'s manifest (or: kubectl patch randomsecret {name} --type merge --patch-file FILE)"
        );
        return Ok(());
    }
    let run = async {
        let client = fetch::client(args.kubeconfig.as_deref(), args.context.as_deref()).await?;
        let ns = args
            .namespace
            .clone()
            .unwrap_or_else(|| client.default_namespace().to_string());
        let Some(name) = single else {
            return rotate::many(&args, &client, &ns, &what, &token).await;
        };
        let (old, version) = rotate::rotate(&client, &ns, &name, key, &token).await?;
        let old = old.map_or("unset".to_string(), |o| format!("{o:?}"));
        match version {
            Some(v) => {
                println!("randomsecret/{name} rotated: {what} {old} -> {token:?}; new version {v}")
            }
            None => println!("randomsecret/{name} rotated: {what} {old} -> {token:?}"),
        }
        anyhow::Ok(())
    };
    block_on(run)
}

/// Runs a command's work on a one-thread runtime; its error, as printed.
fn block_on(run: impl std::future::Future<Output = anyhow::Result<()>>) -> Result<(), String> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("tokio runtime")
        .block_on(run)
        .map_err(|e| format!("{e:#}"))
}

fn main() -> ExitCode {
    let cli = parse_cli();
    let result: Result<(), String> = match cli.command {
        Command::Controller(args) => {
            init_logging(&args);
            let rt = tokio::runtime::Builder::new_multi_thread()
                .enable_all()
                .build()
                .expect("tokio runtime");
            // On a worker, not on this thread: block_on polls its future
            // on the main thread, where each request of a reconcile would
            // hop to the workers that run the connections and back, a
            // futex wake-up each way (10.6 to 13.1 CPU s per 10,000 new
            // versions, 9.4 on a worker: docs/src/benchmarks.md).
            let run = rt.spawn(controller::run(*args));
            match rt.block_on(run) {
                Ok(result) => result.map_err(|e| format!("{e:#}")),
                Err(e) => std::panic::resume_unwind(e.into_panic()),
            }
        }
        Command::Status(args) => block_on(status(args)),
        Command::Check(args) => block_on(async move {
            let client = fetch::client(args.kubeconfig.as_deref(), args.context.as_deref()).await?;
            let settings = randomsecret::check::Settings {
                namespace: args
                    .namespace
                    .clone()
                    .unwrap_or_else(|| client.default_namespace().to_string()),
                lease: args.lease.clone(),
                max_lag: args.max_lag,
                webhook_namespace: args.webhook_namespace.clone(),
            };
            randomsecret::check::run(&client, &settings, args.wait).await
        }),
        Command::Crd { dir: None } => {
            print!("{}", api::crd_yaml());
            Ok(())
        }
        Command::Crd { dir: Some(dir) } => api::crds().iter().try_for_each(|(name, crd)| {
            std::fs::write(dir.join(name), api::crd_file_yaml(crd))
                .map_err(|e| format!("{}: {e}", dir.join(name).display()))
        }),
        Command::Docs { dir } => randomsecret::docgen::pages().iter().try_for_each(|(name, text)| {
            std::fs::write(dir.join(name), text).map_err(|e| format!("{}: {e}", dir.join(name).display()))
        }),
        Command::Name { input, explain } => name(input, explain),
        Command::Diff { old, new } if old.as_os_str() == "-" && new.as_os_str() == "-" => {
            Err("diff: only one of OLD and NEW can be - (standard input)".into())
        }
        Command::Diff { old, new } => input::read(Some(&old)).and_then(|old_text| {
            let new_text = input::read(Some(&new))?;
            let read = |text: &str, file: &std::path::Path| {
                gitops::explain::named(text).map_err(|e| input::in_file(file, e))
            };
            let (old_rs, new_rs) = (read(&old_text, &old)?, read(&new_text, &new)?);
            print!("{}", clean(&gitops::explain::diff_of(&old_rs, &new_rs)));
            Ok(())
        }),
        Command::Rotate(args) => rotate(args),
        Command::ReleaseFinalizers(args) => release_finalizers(args),
        Command::Resolve { input, references } => resolve(input, &references),
        Command::Kustomize => input::read(None).and_then(|input| {
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
            eprintln!("randomsecret: {}", clean(&e));
            ExitCode::FAILURE
        }
    }
}
