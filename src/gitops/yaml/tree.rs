//! The deserializer from a YAML document to a `serde_json::Value`: keys as
//! strings as written, numbers within JSON's.

use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess};
use serde_json::{Map, Number, Value};
use std::fmt;

/// A document read as a JSON value; `TYPED_KEYS`: plain keys that read as
/// booleans or numbers become their canonical strings (else as written).
pub(super) struct Doc<const TYPED_KEYS: bool>(pub(super) Value);

impl<'de, const TYPED_KEYS: bool> de::Deserialize<'de> for Doc<TYPED_KEYS> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Node {
            typed_keys: TYPED_KEYS,
        }
        .deserialize(d)
        .map(Doc)
    }
}

/// Reads any node into a JSON value.
#[derive(Clone, Copy)]
pub(super) struct Node {
    typed_keys: bool,
}

impl<'de> DeserializeSeed<'de> for Node {
    type Value = Value;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(self)
    }
}

pub(super) fn number<E: de::Error>(n: Option<Number>) -> Result<Value, E> {
    n.map(Value::Number)
        .ok_or_else(|| E::custom("a number that JSON cannot carry"))
}

impl<'de> de::Visitor<'de> for Node {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a YAML node")
    }
    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_none<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        self.deserialize(d)
    }
    fn visit_newtype_struct<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        self.deserialize(d)
    }
    fn visit_bool<E>(self, b: bool) -> Result<Value, E> {
        Ok(Value::Bool(b))
    }
    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(Value::Number(v.into()))
    }
    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(Value::Number(v.into()))
    }
    fn visit_i128<E: de::Error>(self, v: i128) -> Result<Value, E> {
        match i64::try_from(v) {
            Ok(v) => Ok(Value::Number(v.into())),
            Err(_) => number(Number::from_f64(v as f64)),
        }
    }
    fn visit_u128<E: de::Error>(self, v: u128) -> Result<Value, E> {
        match u64::try_from(v) {
            Ok(v) => Ok(Value::Number(v.into())),
            Err(_) => number(Number::from_f64(v as f64)),
        }
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Value, E> {
        number(Number::from_f64(v))
    }
    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_string()))
    }
    fn visit_string<E>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }
    fn visit_bytes<E: de::Error>(self, v: &[u8]) -> Result<Value, E> {
        String::from_utf8(v.to_vec())
            .map(Value::String)
            .map_err(|_| E::custom("binary data that is not UTF-8"))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut out = Vec::new();
        while let Some(v) = seq.next_element_seed(self)? {
            out.push(v);
        }
        Ok(Value::Array(out))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut out = Map::new();
        while let Some(k) = map.next_key_seed(Key {
            typed: self.typed_keys,
        })? {
            out.insert(k, map.next_value_seed(self)?);
        }
        Ok(Value::Object(out))
    }
}

/// Reads a mapping key into a string.
pub(super) struct Key {
    typed: bool,
}

impl<'de> DeserializeSeed<'de> for Key {
    type Value = String;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<String, D::Error> {
        if self.typed {
            d.deserialize_any(self)
        } else {
            d.deserialize_string(self)
        }
    }
}

impl<'de> de::Visitor<'de> for Key {
    type Value = String;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a string, boolean or number as a mapping key (JSON keys are strings)")
    }
    fn visit_bool<E>(self, b: bool) -> Result<String, E> {
        Ok(b.to_string())
    }
    fn visit_i64<E>(self, v: i64) -> Result<String, E> {
        Ok(v.to_string())
    }
    fn visit_u64<E>(self, v: u64) -> Result<String, E> {
        Ok(v.to_string())
    }
    fn visit_i128<E>(self, v: i128) -> Result<String, E> {
        Ok(v.to_string())
    }
    fn visit_u128<E>(self, v: u128) -> Result<String, E> {
        Ok(v.to_string())
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<String, E> {
        // As serde_json writes a float (and wrote float keys from serde_yaml): 1.0, 1000.0.
        match Number::from_f64(v) {
            Some(n) => Ok(n.to_string()),
            None => Err(E::custom("a mapping key that is not a finite number")),
        }
    }
    fn visit_str<E>(self, v: &str) -> Result<String, E> {
        Ok(v.to_string())
    }
    fn visit_string<E>(self, v: String) -> Result<String, E> {
        Ok(v)
    }
}
