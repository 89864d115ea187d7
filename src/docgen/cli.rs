//! The command-line reference: every visible subcommand of `randomsecret`,
//! walked from clap's `Command` tree (the same definitions `--help` prints).

use super::{banner, cell, code, prose};
use clap::{Arg, ArgAction, Command, CommandFactory};
use std::fmt::Write;

/// The page `docs/src/reference/cli.md`.
pub fn page() -> String {
    let mut root = crate::cli::Cli::command();
    root.build();
    let mut out = String::from("# Command-line reference\n\n");
    out += &banner("the clap definitions in `src/cli.rs`");
    let _ = writeln!(
        out,
        "\n`randomsecret`: {}. One binary, one subcommand per entry point; \
         `randomsecret SUBCOMMAND --help` prints the same as this page. Installed \
         as `kubectl-randomsecret` it is also the kubectl plugin (`kubectl randomsecret status`).",
        text(root.get_about()).trim_end_matches('.')
    );
    let mut subs: Vec<&Command> = root
        .get_subcommands()
        .filter(|s| !s.is_hide_set() && s.get_name() != "help")
        .collect();
    subs.sort_by_key(|s| s.get_name());
    out += "\n| subcommand | what it does |\n|---|---|\n";
    for s in &subs {
        let _ = writeln!(
            out,
            "| [`{0}`](#randomsecret-{0}) | {1} |",
            s.get_name(),
            cell(&prose(&sentence(text(s.get_about()))))
        );
    }
    for s in subs {
        subcommand(&mut out, s);
    }
    out
}

fn subcommand(out: &mut String, cmd: &Command) {
    let about = cmd.get_long_about().or(cmd.get_about());
    let mut usage = cmd.clone().render_usage().to_string();
    usage = usage.trim().to_string();
    let _ = write!(
        out,
        "\n## `randomsecret {}`\n\n{}\n\n```text\n{usage}\n```\n",
        cmd.get_name(),
        prose(&sentence(text(about)))
    );
    let args: Vec<&Arg> = cmd
        .get_arguments()
        .filter(|a| !a.is_hide_set() && !matches!(a.get_id().as_str(), "help" | "version"))
        .collect();
    if args.is_empty() {
        return;
    }
    // Grouped as --help groups them: the flattened groups under their heading.
    let mut headings: Vec<Option<&str>> = Vec::new();
    for a in &args {
        if !headings.contains(&a.get_help_heading()) {
            headings.push(a.get_help_heading());
        }
    }
    for heading in headings {
        if let Some(h) = heading {
            let _ = write!(out, "\n**{h}**\n");
        }
        out.push_str("\n| argument | environment | default | meaning |\n|---|---|---|---|\n");
        for a in args.iter().filter(|a| a.get_help_heading() == heading) {
            let env = a
                .get_env()
                .map(|e| code(&e.to_string_lossy()))
                .unwrap_or_default();
            let default = a
                .get_default_values()
                .iter()
                .map(|v| code(&v.to_string_lossy()))
                .collect::<Vec<_>>()
                .join(", ");
            let _ = writeln!(
                out,
                "| {} | {env} | {default} | {} |",
                code(&spelling(a)),
                cell(&meaning(a))
            );
        }
    }
}

/// How the argument is written: `-n, --namespace <NAMESPACE>`, `<NAME>`.
fn spelling(a: &Arg) -> String {
    let value = || {
        let names = a
            .get_value_names()
            .map(|n| n.iter().map(|n| n.to_string()).collect::<Vec<_>>())
            .unwrap_or_else(|| vec![a.get_id().as_str().to_uppercase()]);
        names
            .iter()
            .map(|n| format!("<{n}>"))
            .collect::<Vec<_>>()
            .join(" ")
    };
    if a.is_positional() {
        return value();
    }
    let mut s = String::new();
    if let Some(c) = a.get_short() {
        s += &format!("-{c}");
    }
    if let Some(l) = a.get_long() {
        if !s.is_empty() {
            s += ", ";
        }
        s += &format!("--{l}");
    }
    if matches!(a.get_action(), ArgAction::Set | ArgAction::Append) {
        s += " ";
        s += &value();
        if a.get_value_delimiter().is_some() {
            s += ",...";
        }
    }
    s
}

/// The help text, then the values it takes and whether it is required or repeatable.
fn meaning(a: &Arg) -> String {
    let mut m = prose(&sentence(text(a.get_long_help().or(a.get_help()))));
    let values: Vec<String> = a
        .get_possible_values()
        .iter()
        .filter(|v| !v.is_hide_set())
        .map(|v| match v.get_help() {
            Some(h) => format!(
                "{}: {}",
                code(v.get_name()),
                prose(h.to_string().trim_end_matches('.'))
            ),
            None => code(v.get_name()),
        })
        .collect();
    // Booleans' true/false say nothing the flag's spelling does not.
    if !values.is_empty() && !matches!(a.get_action(), ArgAction::SetTrue | ArgAction::SetFalse) {
        m += &format!(" Values: {}.", values.join("; "));
    }
    if a.is_required_set() {
        m += " Required.";
    }
    if matches!(a.get_action(), ArgAction::Append) {
        m += " Repeatable.";
    }
    m.trim().to_string()
}

/// clap drops a one-line help's final period; the page has sentences.
fn sentence(mut s: String) -> String {
    if !s.is_empty() && !s.ends_with(['.', '!', '?']) {
        s.push('.');
    }
    s
}

fn text(s: Option<&clap::builder::StyledStr>) -> String {
    s.map(|s| s.to_string())
        .unwrap_or_default()
        .trim()
        .to_string()
}

#[cfg(test)]
mod tests {
    #[test]
    fn every_visible_subcommand_and_flag_is_on_the_page() {
        let page = super::page();
        for needle in [
            "## `randomsecret controller`",
            "## `randomsecret status`",
            "`--leader-elect`",
            "`RANDOMSECRET_WEBHOOK_CERT_MODE`",
            "`self`: This controller",
            "`-o, --output <OUTPUT>`",
        ] {
            assert!(page.contains(needle), "{needle} missing from:\n{page}");
        }
        assert!(
            !page.contains("randomsecret docs"),
            "the hidden generator is not documented"
        );
    }
}
