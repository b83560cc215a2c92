//! JSON a client sends, read strictly: an object that names a key twice is refused (serde's
//! `Value` would keep the last one silently, and an instruction to publish that says two
//! things is ambiguous), and so is U+0000 in any string or key (a client's own text is never
//! rewritten; see [`crate::text`]). Each refusal names the field, as `tiktok.caption` or
//! `items[2].url`.

use std::cell::RefCell;
use std::fmt;

use serde::de::{DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};

/// Why a strict read refused a JSON text.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum StrictJsonError {
    /// Not JSON at all (serde_json's message, without its position).
    Syntax(String),
    /// A field with a problem: its path (`caption`, `a.b[0]`; empty for the whole text) and
    /// what is wrong.
    Field {
        /// Where, from the top of the text.
        path: String,
        /// What is wrong there.
        message: String,
    },
}

/// Parses `text` as JSON, refusing duplicate keys and U+0000 (see the module).
pub fn parse_strict(text: &[u8]) -> Result<Value, StrictJsonError> {
    let refusal = RefCell::new(None);
    let mut deserializer = serde_json::Deserializer::from_slice(text);
    let seed = Strict {
        path: String::new(),
        refusal: &refusal,
    };
    let parsed = seed.deserialize(&mut deserializer).and_then(|value| {
        deserializer.end()?;
        Ok(value)
    });
    match (parsed, refusal.into_inner()) {
        (_, Some((path, message))) => Err(StrictJsonError::Field { path, message }),
        (Ok(value), None) => Ok(value),
        (Err(error), None) => {
            let message = error.to_string();
            let message = message.split(" at line ").next().unwrap_or(&message);
            Err(StrictJsonError::Syntax(message.to_owned()))
        }
    }
}

/// Where the first refusal is noted: serde's errors carry only text, and the path is ours.
type Refusal = RefCell<Option<(String, String)>>;

struct Strict<'a> {
    path: String,
    refusal: &'a Refusal,
}

impl Strict<'_> {
    fn refuse<E: serde::de::Error>(&self, path: String, message: &str) -> E {
        self.refusal
            .borrow_mut()
            .get_or_insert((path, message.to_owned()));
        E::custom(message)
    }

    fn child(&self, step: &str) -> Strict<'_> {
        let path = if self.path.is_empty() || step.starts_with('[') {
            format!("{}{step}", self.path)
        } else {
            format!("{}.{step}", self.path)
        };
        Strict {
            path,
            refusal: self.refusal,
        }
    }

    fn text<E: serde::de::Error>(&self, text: &str) -> Result<Value, E> {
        if text.contains('\0') {
            return Err(self.refuse(self.path.clone(), NUL_MESSAGE));
        }
        Ok(Value::String(text.to_owned()))
    }
}

const NUL_MESSAGE: &str = "must not contain a NUL character";

impl<'de> DeserializeSeed<'de> for Strict<'_> {
    type Value = Value;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Strict<'_> {
    type Value = Value;

    fn expecting(&self, formatter: &mut fmt::Formatter) -> fmt::Result {
        formatter.write_str("a JSON value")
    }

    fn visit_bool<E>(self, value: bool) -> Result<Value, E> {
        Ok(Value::Bool(value))
    }

    fn visit_i64<E>(self, value: i64) -> Result<Value, E> {
        Ok(Value::from(value))
    }

    fn visit_u64<E>(self, value: u64) -> Result<Value, E> {
        Ok(Value::from(value))
    }

    fn visit_f64<E: serde::de::Error>(self, value: f64) -> Result<Value, E> {
        serde_json::Number::from_f64(value)
            .map(Value::Number)
            .ok_or_else(|| E::custom("a number that is not finite"))
    }

    fn visit_str<E: serde::de::Error>(self, value: &str) -> Result<Value, E> {
        self.text(value)
    }

    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut items = Vec::new();
        loop {
            let child = self.child(&format!("[{}]", items.len()));
            match seq.next_element_seed(child)? {
                Some(item) => items.push(item),
                None => return Ok(Value::Array(items)),
            }
        }
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut members = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            // A field is named as it reads, a NUL in it as U+FFFD.
            let shown = crate::text::without_nul(&crate::text::excerpt(&key, 40)).into_owned();
            if key.contains('\0') {
                return Err(self.refuse(self.child(&shown).path, NUL_MESSAGE));
            }
            if members.contains_key(&key) {
                let path = self.child(&shown).path;
                return Err(self.refuse(path, "is given more than once"));
            }
            let value = map.next_value_seed(self.child(&key))?;
            members.insert(key, value);
        }
        Ok(Value::Object(members))
    }
}

impl StrictJsonError {
    /// The field to name in a `400`: the path, or `fallback` for the text as a whole (the
    /// form field or body it came in), with the path put under `fallback` when asked.
    pub fn field(&self, fallback: &str, nest: bool) -> String {
        match self {
            StrictJsonError::Field { path, .. } if path.is_empty() => fallback.to_owned(),
            StrictJsonError::Field { path, .. } if nest => format!("{fallback}.{path}"),
            StrictJsonError::Field { path, .. } => path.clone(),
            StrictJsonError::Syntax(_) => fallback.to_owned(),
        }
    }

    /// The `400` naming [`StrictJsonError::field`].
    pub fn into_error(self, fallback: &str, nest: bool) -> crate::Error {
        crate::Error::invalid(self.field(fallback, nest), self.message())
    }

    /// What is wrong.
    pub fn message(&self) -> String {
        match self {
            StrictJsonError::Field { message, .. } => message.clone(),
            StrictJsonError::Syntax(message) => format!("is not valid JSON ({message})"),
        }
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    fn refused(text: &str) -> (String, String) {
        match parse_strict(text.as_bytes()) {
            Err(StrictJsonError::Field { path, message }) => (path, message),
            other => panic!("{text}: {other:?}"),
        }
    }

    #[test]
    fn duplicate_keys_and_nul_are_named_by_their_path() {
        assert_eq!(
            refused(r#"{"caption":"a","caption":"b"}"#),
            ("caption".into(), "is given more than once".into())
        );
        assert_eq!(
            refused(r#"{"a":{"b":[1,{"c":"x\u0000y"}]}}"#),
            ("a.b[1].c".into(), NUL_MESSAGE.into())
        );
        assert_eq!(refused(r#""\u0000""#), (String::new(), NUL_MESSAGE.into()));
        assert_eq!(
            refused(r#"{"k\u0000":1}"#),
            ("k\u{FFFD}".into(), NUL_MESSAGE.into())
        );
        assert!(matches!(
            parse_strict(br#"{"a":1} x"#),
            Err(StrictJsonError::Syntax(_))
        ));
        assert_eq!(
            parse_strict(br#"{"a":[1,2.5,null,true,"\u00e9"]}"#).unwrap(),
            serde_json::json!({"a": [1, 2.5, null, true, "é"]})
        );
    }

    proptest! {
        /// What serde_json reads without duplicates or NULs, the strict read reads the same.
        #[test]
        fn agrees_with_serde_json_on_what_it_accepts(text in any::<String>()) {
            let lenient: Result<Value, _> = serde_json::from_str(&text);
            match parse_strict(text.as_bytes()) {
                Ok(value) => prop_assert_eq!(Ok(value), lenient.map_err(|_| ())),
                Err(StrictJsonError::Syntax(_)) => prop_assert!(lenient.is_err()),
                Err(StrictJsonError::Field { .. }) => {}
            }
        }

        /// Any JSON document round-trips, and every NUL in it is found.
        #[test]
        fn reads_what_serde_json_writes(value in json_value()) {
            let text = value.to_string();
            let has_nul = text.contains("\\u0000");
            match parse_strict(text.as_bytes()) {
                Ok(read) => { prop_assert!(!has_nul); prop_assert_eq!(read, value); }
                Err(StrictJsonError::Field { message, .. }) => {
                    prop_assert!(has_nul);
                    prop_assert_eq!(message, NUL_MESSAGE);
                }
                Err(other) => prop_assert!(false, "{other:?}"),
            }
        }
    }

    fn json_value() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i64>().prop_map(Value::from),
            "[a-z\u{0}é]{0,6}".prop_map(Value::String),
        ];
        leaf.prop_recursive(3, 24, 4, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
                prop::collection::btree_map("[a-z\u{0}]{0,3}", inner, 0..4)
                    .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }
}
