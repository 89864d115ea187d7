//! `keys.<k>.template`: values rendered from a version's other values with
//! MiniJinja (no loader, strict undefined, bounded by fuel), in the order
//! their references ask for. Pure: the spec check renders with stand-in
//! values to find syntax errors, missing keys and cycles before any value
//! exists; the version is rendered with its own values when it is made.
//!
//! Errors name keys, never values: a render error is reported by its kind
//! and line only (MiniJinja's detail may quote a value).

use minijinja::value::{Object, Value};
use minijinja::{Environment, ErrorKind, UndefinedBehavior};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

/// Instructions one template may run (MiniJinja's fuel): far more than any
/// connection string or config file takes, far less than a runaway loop.
const FUEL: u64 = 100_000;

/// The largest output of one template, in bytes (a Secret holds 1 MiB).
pub const MAX_OUTPUT: usize = 1_048_576;

/// What `urlquote` encodes: all but RFC 3986's unreserved characters.
const URL_QUOTED: &percent_encoding::AsciiSet = &percent_encoding::NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~');

/// Why templates could not be rendered; each names the keys to fix.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TemplateError {
    #[error("keys.{key}.template does not parse: {why}")]
    Syntax { key: String, why: String },
    #[error(
        "keys.{key}.template reads {missing}, which is not there: name a key that keys writes (a generated value, a public key, a JWKS, an htpasswd line or another template) or a key of static"
    )]
    Missing { key: String, missing: String },
    #[error(
        "keys.{key}.template reads keys.{input}, which is not text (bytes with encoding raw?): give that key an encoding such as base64"
    )]
    NotText { key: String, input: String },
    #[error(
        "templates read each other in a cycle ({}): break it",
        cycle.iter().map(|k| format!("keys.{k}")).collect::<Vec<_>>().join(" -> ")
    )]
    Cycle { cycle: Vec<String> },
    #[error("keys.{key}.template failed to render: {why}")]
    Render { key: String, why: String },
    #[error("keys.{key}.template renders more than 1 MiB")]
    TooLarge { key: String },
}

impl TemplateError {
    /// The key of keys it is about (a cycle's first).
    pub fn key(&self) -> &str {
        match self {
            TemplateError::Syntax { key, .. }
            | TemplateError::Missing { key, .. }
            | TemplateError::NotText { key, .. }
            | TemplateError::Render { key, .. }
            | TemplateError::TooLarge { key } => key,
            TemplateError::Cycle { cycle } => cycle.first().map_or("", String::as_str),
        }
    }
}

/// The environment every template renders in: no loader, undefined values
/// are errors, fuel bounds the work, and `b64encode` joins the built-ins.
fn environment() -> Environment<'static> {
    let mut env = Environment::new();
    env.set_undefined_behavior(UndefinedBehavior::Strict);
    // Values go out as they are: MiniJinja would otherwise pick HTML or
    // JSON escaping from a name's extension (a key named config.json).
    env.set_auto_escape_callback(|_| minijinja::AutoEscape::None);
    // A config file's last newline is part of it.
    env.set_syntax(
        minijinja::syntax::SyntaxConfig::builder()
            .keep_trailing_newline(true)
            .build()
            .expect("the default delimiters"),
    );
    env.set_fuel(Some(FUEL));
    env.add_filter("b64encode", |s: String| {
        data_encoding::BASE64.encode(s.as_bytes())
    });
    // urlencode keeps '/' (as Jinja's does), which breaks a password in a
    // URL's userinfo: urlquote keeps only RFC 3986's unreserved characters.
    env.add_filter("urlquote", |s: String| {
        percent_encoding::utf8_percent_encode(&s, URL_QUOTED).to_string()
    });
    env
}

/// Renders every template of `templates` (key → text). `values`: what they
/// may read as `keys.<name>` (text, or `None` for a value that is not
/// UTF-8); `statics`: `static.<name>`. Returns each template's output.
pub fn render_all(
    templates: &BTreeMap<String, String>,
    values: BTreeMap<String, Option<String>>,
    statics: &BTreeMap<String, String>,
) -> Result<BTreeMap<String, String>, TemplateError> {
    let scope = Arc::new(Scope {
        env: environment(),
        templates: templates.clone(),
        values,
        statics: statics.clone(),
        state: Mutex::new(State::default()),
    });
    for key in templates.keys() {
        scope.render(key)?;
    }
    let state = scope.state.lock().expect("not poisoned");
    Ok(state.rendered.clone())
}

/// Checks `templates` with a stand-in for each readable value (name, and
/// whether it is text): what fails here (syntax, a missing key, a value
/// that is not text, a cycle) fails for every version.
pub fn check<'a>(
    templates: &BTreeMap<String, String>,
    readable: impl IntoIterator<Item = (&'a String, bool)>,
    statics: &BTreeMap<String, String>,
) -> Result<(), TemplateError> {
    let values = readable
        .into_iter()
        .map(|(k, text)| (k.clone(), text.then(|| String::from("x"))))
        .collect();
    render_all(templates, values, statics).map(|_| ())
}

#[derive(Debug)]
struct Scope {
    env: Environment<'static>,
    templates: BTreeMap<String, String>,
    values: BTreeMap<String, Option<String>>,
    statics: BTreeMap<String, String>,
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    rendered: BTreeMap<String, String>,
    /// The templates being rendered, outermost first.
    stack: Vec<String>,
    /// The first thing a lookup found wrong (a render error only says
    /// "undefined"): reported instead of it.
    error: Option<TemplateError>,
}

/// `keys` or `static` as a template sees it: lookups resolve (and render
/// other templates) on demand, so the order follows the references.
#[derive(Debug)]
struct Names {
    scope: Arc<Scope>,
    statics: bool,
}

impl Object for Names {
    fn get_value(self: &Arc<Self>, name: &Value) -> Option<Value> {
        let name = name.as_str()?;
        let scope = &self.scope;
        let reading = || {
            let state = scope.state.lock().expect("not poisoned");
            state.stack.last().cloned().unwrap_or_default()
        };
        if self.statics {
            if let Some(v) = scope.statics.get(name) {
                return Some(Value::from(v.as_str()));
            }
            scope.record(TemplateError::Missing {
                key: reading(),
                missing: format!("static.{name}"),
            });
            return None;
        }
        match scope.values.get(name) {
            Some(Some(v)) => return Some(Value::from(v.as_str())),
            Some(None) => {
                scope.record(TemplateError::NotText {
                    key: reading(),
                    input: name.to_string(),
                });
                return None;
            }
            None => {}
        }
        if !scope.templates.contains_key(name) {
            scope.record(TemplateError::Missing {
                key: reading(),
                missing: format!("keys.{name}"),
            });
            return None;
        }
        match scope.render(name) {
            Ok(v) => Some(Value::from(v)),
            Err(e) => {
                scope.record(e);
                None
            }
        }
    }
}

impl Scope {
    /// Keeps the first finding, but a cycle over anything else.
    fn record(&self, e: TemplateError) {
        let mut state = self.state.lock().expect("not poisoned");
        let cycle = matches!(e, TemplateError::Cycle { .. });
        if state.error.is_none() || cycle {
            state.error = Some(e);
        }
    }

    /// The output of template `key`, rendered once.
    fn render(self: &Arc<Self>, key: &str) -> Result<String, TemplateError> {
        {
            let mut state = self.state.lock().expect("not poisoned");
            if let Some(done) = state.rendered.get(key) {
                return Ok(done.clone());
            }
            if let Some(at) = state.stack.iter().position(|k| k == key) {
                let mut cycle = state.stack[at..].to_vec();
                cycle.push(key.to_string());
                return Err(TemplateError::Cycle { cycle });
            }
            state.stack.push(key.to_string());
        }
        // What this render's lookups find wrong is its own: an outer
        // template's findings wait aside.
        let outer = self.state.lock().expect("not poisoned").error.take();
        let source = &self.templates[key];
        let ctx = minijinja::context! {
            keys => Value::from_object(Names { scope: self.clone(), statics: false }),
            static => Value::from_object(Names { scope: self.clone(), statics: true }),
        };
        let out = self.env.render_named_str(key, source, ctx);
        let mut state = self.state.lock().expect("not poisoned");
        state.stack.pop();
        let mine = std::mem::replace(&mut state.error, outer);
        let found = match mine {
            // A cycle is wrong even where the template tested `is defined`.
            Some(e @ TemplateError::Cycle { .. }) => Some(e),
            Some(e) if out.is_err() => Some(e),
            _ => None,
        };
        if let Some(e) = found {
            return Err(e);
        }
        let out = out.map_err(|e| described(key, &e))?;
        if out.len() > MAX_OUTPUT {
            return Err(TemplateError::TooLarge {
                key: key.to_string(),
            });
        }
        state.rendered.insert(key.to_string(), out.clone());
        Ok(out)
    }
}

/// A MiniJinja error as the user may see it: its kind and line; the detail
/// only for a syntax error (it quotes the template, never a value).
fn described(key: &str, e: &minijinja::Error) -> TemplateError {
    let line = e.line().map(|l| format!(" (line {l})")).unwrap_or_default();
    match e.kind() {
        ErrorKind::SyntaxError => TemplateError::Syntax {
            key: key.to_string(),
            why: format!("{}{line}", e.detail().unwrap_or("syntax error")),
        },
        ErrorKind::OutOfFuel => TemplateError::Render {
            key: key.to_string(),
            why: format!("it runs too long (more than {FUEL} steps){line}"),
        },
        kind => TemplateError::Render {
            key: key.to_string(),
            why: format!("{kind}{line}"),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn map(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    fn values(pairs: &[(&str, &str)]) -> BTreeMap<String, Option<String>> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), Some(v.to_string())))
            .collect()
    }

    #[test]
    fn renders_from_keys_and_static_in_reference_order() {
        let templates = map(&[
            ("a", "{{ keys.b }}!"),
            (
                "b",
                "postgres://{{ static.user }}:{{ keys.password | urlquote }}@db",
            ),
        ]);
        let out = render_all(
            &templates,
            values(&[("password", "p/w@:x")]),
            &map(&[("user", "app")]),
        )
        .unwrap();
        assert_eq!(out["b"], "postgres://app:p%2Fw%40%3Ax@db");
        assert_eq!(out["a"], "postgres://app:p%2Fw%40%3Ax@db!");
        // urlencode is Jinja's: '/' stays.
        let out = render_all(
            &map(&[("u", "{{ keys.p | urlencode }}")]),
            values(&[("p", "a/b c~")]),
            &BTreeMap::new(),
        )
        .unwrap();
        assert_eq!(out["u"], "a/b%20c%7E");
    }

    #[test]
    fn subscripts_filters_and_b64encode() {
        let templates = map(&[(
            "cfg",
            r#"{"auths":{"r":{"auth":{{ (static.u ~ ":" ~ keys["pass.word"]) | b64encode | tojson }}}}}"#,
        )]);
        let out = render_all(
            &templates,
            values(&[("pass.word", "s3cret")]),
            &map(&[("u", "me")]),
        )
        .unwrap();
        assert_eq!(out["cfg"], r#"{"auths":{"r":{"auth":"bWU6czNjcmV0"}}}"#);
    }

    /// Keys named like files (config.json, page.html) render their values
    /// as they are, and a template's last newline stays.
    #[test]
    fn no_escaping_by_name_and_the_last_newline_stays() {
        let templates = map(&[
            ("config.json", "{\"p\": \"{{ keys.p }}\"}\n"),
            ("page.html", "{{ keys.p }}"),
        ]);
        let out = render_all(&templates, values(&[("p", "<a&'\">")]), &BTreeMap::new()).unwrap();
        assert_eq!(out["config.json"], "{\"p\": \"<a&'\">\"}\n");
        assert_eq!(out["page.html"], "<a&'\">");
    }

    #[test]
    fn a_missing_key_names_both_keys() {
        let templates = map(&[("dsn", "{{ keys.pasword }}")]);
        let e = check(
            &templates,
            [(&"password".to_string(), true)],
            &BTreeMap::new(),
        )
        .unwrap_err();
        assert_eq!(
            e,
            TemplateError::Missing {
                key: "dsn".into(),
                missing: "keys.pasword".into()
            }
        );
        let e = check(&map(&[("dsn", "{{ static.user }}")]), [], &BTreeMap::new()).unwrap_err();
        assert!(
            e.to_string()
                .contains("keys.dsn.template reads static.user")
        );
    }

    #[test]
    fn a_cycle_names_every_key_in_it() {
        let templates = map(&[
            ("a", "{{ keys.b }}"),
            ("b", "{{ keys.c }}"),
            ("c", "{{ keys.a }}"),
        ]);
        let e = check(&templates, [], &BTreeMap::new()).unwrap_err();
        assert_eq!(
            e.to_string(),
            "templates read each other in a cycle (keys.a -> keys.b -> keys.c -> keys.a): break it"
        );
        // Even behind a test that would hide the undefined value.
        let templates = map(&[("a", "{% if keys.a is defined %}x{% endif %}")]);
        assert!(matches!(
            check(&templates, [], &BTreeMap::new()),
            Err(TemplateError::Cycle { .. })
        ));
    }

    #[test]
    fn errors_never_quote_a_value() {
        let templates = map(&[("n", "{{ keys.secret | int + [] }}")]);
        let e = render_all(
            &templates,
            values(&[("secret", "hunter2")]),
            &BTreeMap::new(),
        )
        .unwrap_err();
        assert!(!e.to_string().contains("hunter2"), "{e}");
        assert!(matches!(e, TemplateError::Render { .. }), "{e:?}");
    }

    #[test]
    fn syntax_errors_and_runaway_loops_are_refused() {
        let e = check(&map(&[("t", "{{ keys.x ")]), [], &BTreeMap::new()).unwrap_err();
        assert!(matches!(e, TemplateError::Syntax { .. }), "{e:?}");
        let e = check(
            &map(&[(
                "t",
                "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}",
            )]),
            [],
            &BTreeMap::new(),
        )
        .unwrap_err();
        assert!(e.to_string().contains("runs too long"), "{e}");
    }

    #[test]
    fn a_value_that_is_not_text_is_named() {
        let mut v = BTreeMap::new();
        v.insert("raw".to_string(), None);
        let e = render_all(&map(&[("t", "{{ keys.raw }}")]), v, &BTreeMap::new()).unwrap_err();
        assert_eq!(
            e,
            TemplateError::NotText {
                key: "t".into(),
                input: "raw".into()
            }
        );
    }
}
