//! What the code under test logs: a subscriber writing into a buffer, so a
//! test can assert that a line is written, or that a value never is.

use std::io::Write;
use std::sync::{Arc, Mutex};

/// Where a test subscriber writes; `text()` reads what it wrote.
#[derive(Clone, Default)]
pub(crate) struct Buffer(Arc<Mutex<Vec<u8>>>);

impl Buffer {
    pub(crate) fn text(&self) -> String {
        String::from_utf8(self.0.lock().unwrap().clone()).unwrap()
    }
}

impl Write for Buffer {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(b);
        Ok(b.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Runs `f` under a text subscriber (with `filter`, else every level of
/// info and above) and returns what it wrote.
pub(crate) fn written(filter: Option<tracing_subscriber::EnvFilter>, f: impl FnOnce()) -> String {
    let out = Buffer::default();
    let writer = out.clone();
    let builder = tracing_subscriber::fmt().with_writer(move || writer.clone());
    match filter {
        Some(filter) => {
            tracing::subscriber::with_default(builder.with_env_filter(filter).finish(), f)
        }
        None => tracing::subscriber::with_default(builder.finish(), f),
    }
    out.text()
}
