//! The one place that reads and writes YAML (with [serde-saphyr]); everything
//! else works on `serde_json::Value`s and the types read from them.
//!
//! What a manifest means is what kubectl, Helm and kustomize (Go, YAML 1.1)
//! make of it, so reading follows them where serde-saphyr lets it:
//! - a plain `y`, `yes`, `on`, `n`, `no`, `off` (also `Yes`, `YES`, ...) is a
//!   boolean; another spelling (`yEs`) and anything quoted is a string;
//! - `0644` is octal (420) and `1_000` is 1000;
//! - a timestamp (`2024-01-01`) stays a string;
//! - `.inf`, `.nan` and numbers beyond a double (`1e999`) are refused (JSON,
//!   hence the apiserver, cannot carry them);
//! - merge keys (`<<`) are merged.
//!
//! Mapping keys are strings as written; a plain key that YAML 1.2 reads as a
//! boolean or a number becomes its canonical string (`TRUE:` is `"true"`,
//! `0x1F:` is `"31"`), as with serde_yaml before. [`is_yaml11_special`] names
//! the spellings whose meaning differs between YAML 1.1 and 1.2.
//!
//! Writing quotes every string that a YAML 1.1 reader could take for
//! something else (`"on"`, `"017"`, `"2024-01-01"`), so a string stays a
//! string for kubectl. Comments are not kept (serde-saphyr keeps them only
//! in typed `Commented<T>` fields, not through a generic tree).
//!
//! Where serde-saphyr and Go still part (`0X1F`, `1_`, a key `on:`),
//! [`check_plain_scalars`] finds it, for the commands that write back what
//! they read.
//!
//! Input is bounded before anything is built: at most [`MAX_INPUT`] bytes,
//! at most [`MAX_DEPTH`] nested collections (deeper input fails at once,
//! naming the line), alias expansion within the input's length; the other
//! budgets scale with the length of the input, which is already in memory.
//!
//! A byte-order mark is skipped where kubectl skips it (the start of the
//! stream and of each document). [`read_documents`] keeps where each
//! document is in the text, so a document can go out exactly as it came in.
//!
//! [serde-saphyr]: https://docs.rs/serde-saphyr

mod error;
mod go;
mod limits;
mod stream;
mod tree;

pub use error::Error;
pub use go::{Ambiguous, check_plain_scalars};
pub use limits::{MAX_DEPTH, MAX_INPUT, is_yaml11_special};
pub use stream::{
    Document, Stream, check_size, read, read_documents, read_stream, write, write_stream,
};

#[cfg(test)]
mod tests;
