//! The link checker of the book and the README: every relative link must
//! name a file of the repository and every `#anchor` a heading of its page
//! (as GitHub and mdBook make the ids), and every `docs/src/....md#anchor`
//! written in the code (error texts, comments, chart values) must exist too.
//! Reads the working tree only; never the network (links with a scheme are
//! left alone).

use pulldown_cmark::{Event, HeadingLevel, Options, Parser, Tag, TagEnd};
use std::collections::{BTreeMap, HashSet};
use std::path::{Component, Path, PathBuf};

/// The anchors a Markdown page offers and the links it makes (with their line).
#[derive(Debug, Default)]
struct Page {
    anchors: HashSet<String>,
    links: Vec<(String, usize)>,
}

fn options() -> Options {
    Options::ENABLE_TABLES
        | Options::ENABLE_FOOTNOTES
        | Options::ENABLE_STRIKETHROUGH
        | Options::ENABLE_HEADING_ATTRIBUTES
}

/// A heading's id, as mdBook (`id_from_content`) and GitHub make it.
fn slug(text: &str) -> String {
    text.trim()
        .to_lowercase()
        .chars()
        .filter_map(|c| match c {
            c if c.is_alphanumeric() || c == '_' || c == '-' => Some(c),
            c if c.is_whitespace() => Some('-'),
            _ => None,
        })
        .collect()
}

fn parse(text: &str) -> Page {
    let line_of = |offset: usize| text[..offset].matches('\n').count() + 1;
    let mut page = Page::default();
    let mut heading: Option<(String, Option<String>)> = None;
    for (event, range) in Parser::new_ext(text, options()).into_offset_iter() {
        match event {
            Event::Start(Tag::Heading { id, level, .. }) => {
                let _: HeadingLevel = level;
                heading = Some((String::new(), id.map(|i| i.to_string())));
            }
            Event::Text(t) | Event::Code(t) => {
                if let Some((h, _)) = heading.as_mut() {
                    h.push_str(&t);
                }
            }
            Event::End(TagEnd::Heading(_)) => {
                if let Some((h, id)) = heading.take() {
                    let mut id = id.unwrap_or_else(|| slug(&h));
                    // A repeated heading gets -1, -2, ... as in both renderers.
                    let base = id.clone();
                    let mut n = 0;
                    while !page.anchors.insert(id.clone()) {
                        n += 1;
                        id = format!("{base}-{n}");
                    }
                }
            }
            Event::Start(Tag::Link { dest_url, .. })
            | Event::Start(Tag::Image { dest_url, .. }) => {
                page.links
                    .push((dest_url.to_string(), line_of(range.start)));
            }
            _ => {}
        }
    }
    page
}

/// `base` joined with the relative `link`, `..` resolved lexically.
fn join(base: &Path, link: &str) -> PathBuf {
    let mut out = PathBuf::new();
    for c in base.join(link).components() {
        match c {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

/// Every broken link of `pages` (Markdown by repository path), and of the
/// `docs/src/` references in `texts`; `exists` says whether a path of the
/// repository is a file or folder.
fn problems(
    pages: &BTreeMap<PathBuf, String>,
    texts: &BTreeMap<PathBuf, String>,
    exists: &dyn Fn(&Path) -> bool,
) -> Vec<String> {
    let parsed: BTreeMap<&PathBuf, Page> = pages.iter().map(|(p, t)| (p, parse(t))).collect();
    let mut out = Vec::new();
    let mut check = |from: &Path, line: usize, link: &str, relative_to: &Path| {
        if link.contains("://") || link.starts_with("mailto:") || link.starts_with('/') {
            return;
        }
        let (path, anchor) = match link.split_once('#') {
            Some((p, a)) => (p, Some(a)),
            None => (link, None),
        };
        let target = if path.is_empty() {
            from.to_path_buf()
        } else {
            join(relative_to, path)
        };
        if !path.is_empty() && !exists(&target) {
            out.push(format!(
                "{}:{line}: {link}: no file {}",
                from.display(),
                target.display()
            ));
            return;
        }
        let Some(anchor) = anchor else { return };
        match parsed.get(&target) {
            Some(page) if page.anchors.contains(anchor) => {}
            Some(_) => out.push(format!(
                "{}:{line}: {link}: {} has no heading with the anchor #{anchor}",
                from.display(),
                target.display()
            )),
            None => out.push(format!(
                "{}:{line}: {link}: an anchor into {}, which is not a checked Markdown page",
                from.display(),
                target.display()
            )),
        }
    };
    for (path, page) in &parsed {
        let dir = path.parent().unwrap_or(Path::new(""));
        for (link, line) in &page.links {
            check(path, *line, link, dir);
        }
    }
    for (path, text) in texts {
        for (line, link) in references(text) {
            check(path, line, &link, Path::new(""));
        }
    }
    out
}

/// The `docs/src/...md[#anchor]` references in a text, with their line.
fn references(text: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let mut rest = line;
        while let Some(at) = rest.find("docs/src/") {
            let tail = &rest[at..];
            let end = tail
                .find(|c: char| !(c.is_ascii_alphanumeric() || "/._#-".contains(c)))
                .unwrap_or(tail.len());
            let link = tail[..end].trim_end_matches('.');
            if link.contains(".md") {
                out.push((n + 1, link.to_string()));
            }
            rest = &tail[end..];
        }
    }
    out
}

/// The repository's files under `dir` (relative to `root`), without build
/// output and what git ignores here.
fn files(root: &Path, dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(root.join(dir)) else {
        return;
    };
    for e in entries.flatten() {
        let rel = dir.join(e.file_name());
        let name = e.file_name().to_string_lossy().into_owned();
        if name.starts_with('.')
            || matches!(
                name.as_str(),
                "target" | "artifacts" | "coverage" | "node_modules"
            )
        {
            continue;
        }
        if rel == Path::new("examples/helm/app/charts") {
            continue;
        }
        if e.file_type().is_ok_and(|t| t.is_dir()) {
            files(root, &rel, out);
        } else {
            out.push(rel);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The repository's Markdown pages and the texts that may cite them.
    fn repository() -> (
        PathBuf,
        BTreeMap<PathBuf, String>,
        BTreeMap<PathBuf, String>,
    ) {
        let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
        let mut all = Vec::new();
        files(&root, Path::new(""), &mut all);
        let (mut pages, mut texts) = (BTreeMap::new(), BTreeMap::new());
        for f in all {
            let ext = f.extension().and_then(|e| e.to_str()).unwrap_or("");
            let name = f.file_name().and_then(|n| n.to_str()).unwrap_or("");
            let Ok(text) = std::fs::read_to_string(root.join(&f)) else {
                continue;
            };
            if f == Path::new(file!()) {
                continue; // this checker's own fixtures
            } else if ext == "md" {
                pages.insert(f, text);
            } else if matches!(
                ext,
                "rs" | "sh" | "yaml" | "yml" | "tpl" | "toml" | "txt" | "json" | "py"
            ) || name == "Makefile"
            {
                texts.insert(f, text);
            }
        }
        (root, pages, texts)
    }

    /// CI fails on a broken link or anchor in the book, the README or any
    /// other Markdown page, or on a stale `docs/src/` reference in the code.
    #[test]
    fn every_link_and_anchor_of_the_docs_resolves() {
        let (root, pages, texts) = repository();
        assert!(
            pages.contains_key(Path::new("docs/src/SUMMARY.md")),
            "the book is missing"
        );
        let found = problems(&pages, &texts, &|p| root.join(p).exists());
        assert!(found.is_empty(), "broken links:\n{}", found.join("\n"));
    }

    /// A page left out of SUMMARY.md is not in the built book: links to it
    /// would work on GitHub and break in the HTML.
    #[test]
    fn every_page_of_the_book_is_in_its_summary() {
        let (_, pages, _) = repository();
        let summary = parse(&pages[Path::new("docs/src/SUMMARY.md")]);
        let listed: HashSet<PathBuf> = summary
            .links
            .iter()
            .map(|(l, _)| join(Path::new("docs/src"), l))
            .collect();
        let orphans: Vec<_> = pages
            .keys()
            .filter(|p| p.starts_with("docs/src") && !p.ends_with("SUMMARY.md"))
            .filter(|p| !listed.contains(*p))
            .collect();
        assert!(
            orphans.is_empty(),
            "not in docs/src/SUMMARY.md: {orphans:?}"
        );
    }

    fn one(page: &str, text: &str) -> BTreeMap<PathBuf, String> {
        BTreeMap::from([(PathBuf::from(page), text.to_string())])
    }

    #[test]
    fn a_broken_link_a_missing_anchor_and_a_stale_reference_are_reported() {
        let mut pages = one(
            "docs/src/a.md",
            "# A page\n\n## `randomsecret name` (offline)\n\n## Twice\n\n## Twice\n\n\
             [ok](b.md#b-heading) [ok](#randomsecret-name-offline) [ok](#twice-1)\n\
             [gone](c.md) [anchor](b.md#nope) [self](#twice-2) [web](https://example.invalid/x#y)\n",
        );
        pages.insert(
            "docs/src/b.md".into(),
            "# B heading\n![chart](bench/x.svg)\n".into(),
        );
        let texts = one(
            "src/x.rs",
            "see docs/src/b.md#b-heading, docs/src/a.md#gone.\n",
        );
        let exists = |p: &Path| pages.contains_key(p) || p == Path::new("docs/src/bench/x.svg");
        let found = problems(&pages, &texts, &exists);
        assert_eq!(found.len(), 4, "{found:#?}");
        assert!(
            found[0].contains("docs/src/a.md:10: c.md: no file docs/src/c.md"),
            "{found:#?}"
        );
        assert!(
            found[1].contains("b.md#nope: docs/src/b.md has no heading"),
            "{found:#?}"
        );
        assert!(found[2].contains("#twice-2"), "{found:#?}");
        assert!(
            found[3].contains("src/x.rs:1: docs/src/a.md#gone"),
            "{found:#?}"
        );
    }

    #[test]
    fn slugs_are_the_renderers() {
        assert_eq!(
            slug("Pushing versions to Vault / OpenBao"),
            "pushing-versions-to-vault--openbao"
        );
        assert_eq!(slug("Fault suite (`make chaos`)"), "fault-suite-make-chaos");
        assert_eq!(
            slug("1. Kubernetes auth in Vault (once)"),
            "1-kubernetes-auth-in-vault-once"
        );
    }
}
