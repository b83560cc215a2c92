//! Opaque, prefixed, time-ordered identifiers (`prop_0193…`), one type per kind of record.
//!
//! An id is its prefix, an underscore and a UUID in 32 lower-case hex digits. New ids use
//! UUIDv7, so they sort by creation time; test-mode responses derive theirs from a digest
//! ([`Id::derived`]), so the same request always yields the same id.
//!
//! The types keep the storage seam honest: a job id cannot be passed where a property id is
//! expected, and a value that is not an id of the right form never reaches a store (a path
//! segment that does not [`parse`](PropertyId::parse) is a 404 before any query runs).

use std::fmt;

use serde::de::{self, Deserializer};
use serde::{Deserialize, Serialize, Serializer};
#[cfg(feature = "openapi")]
use utoipa::openapi::{
    schema::{ObjectBuilder, Schema, Type},
    RefOr,
};
use uuid::Uuid;

/// What every id type offers beyond its inherent methods; lets code make ids generically.
pub trait Id: Sized {
    /// The prefix, without the underscore.
    const PREFIX: &'static str;

    /// What an id of this kind names, as a `404` says it (`property not found`).
    const RESOURCE: &'static str;

    /// Wraps a string already known to be an id of this kind (see [`PropertyId::from_trusted`]).
    fn from_trusted(value: String) -> Self;

    /// The id `value` is, if it is one of this kind.
    fn parse_str(value: &str) -> Option<Self>;

    /// A new, time-ordered id.
    fn generate() -> Self {
        Self::from_trusted(new_id(Self::PREFIX))
    }

    /// An id whose body is the first 16 bytes of `digest` (zero-padded).
    fn derived(digest: &[u8]) -> Self {
        let mut bytes = [0u8; 16];
        let len = digest.len().min(16);
        bytes[..len].copy_from_slice(&digest[..len]);
        Self::from_trusted(format!(
            "{}_{}",
            Self::PREFIX,
            Uuid::from_bytes(bytes).simple()
        ))
    }
}

/// Whether `value` is `prefix`, `_` and 32 lower-case hex digits.
fn is_id(prefix: &str, value: &str) -> bool {
    value
        .strip_prefix(prefix)
        .and_then(|rest| rest.strip_prefix('_'))
        .is_some_and(|body| {
            // Every byte looked at, without a branch a byte: the compiler checks them
            // several at once (an id is checked on every request that names one).
            body.len() == 32
                && body.bytes().fold(true, |hex, b| {
                    hex & (b.is_ascii_digit() | (b'a'..=b'f').contains(&b))
                })
        })
}

macro_rules! id_type {
    (@resource $what:literal) => { $what };
    (@resource $what:literal, $resource:literal) => { $resource };
    ($(#[$doc:meta])* $name:ident, $prefix:literal, $what:literal $(, $resource:literal)?) => {
        $(#[$doc])*
        #[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub struct $name(String);

        impl $name {
            /// What a valid value looks like, for error messages.
            pub const EXPECTS: &'static str =
                concat!("a ", $what, " id: ", $prefix, "_ and 32 lower-case hex digits");
            /// The pattern the OpenAPI document publishes.
            pub const PATTERN: &'static str = concat!("^", $prefix, "_[0-9a-f]{32}$");

            /// A new, time-ordered id.
            pub fn new() -> Self {
                <Self as Id>::generate()
            }

            /// Checks `value`; `Err` says what a valid value looks like.
            pub fn parse(value: &str) -> Result<Self, &'static str> {
                if is_id($prefix, value) {
                    Ok(Self(value.to_owned()))
                } else {
                    Err(Self::EXPECTS)
                }
            }

            /// Wraps a value without checking it: for a backend reading back the ids it
            /// stored, which were checked on the way in.
            pub fn from_trusted(value: String) -> Self {
                debug_assert!(is_id($prefix, &value), "not a {} id: {value:?}", $what);
                Self(value)
            }

            /// The id.
            pub fn as_str(&self) -> &str {
                &self.0
            }

            /// The id, owned.
            pub fn into_string(self) -> String {
                self.0
            }
        }

        impl Default for $name {
            fn default() -> Self {
                Self::new()
            }
        }

        impl Id for $name {
            const PREFIX: &'static str = $prefix;
            const RESOURCE: &'static str = id_type!(@resource $what $(, $resource)?);

            fn from_trusted(value: String) -> Self {
                $name::from_trusted(value)
            }

            fn parse_str(value: &str) -> Option<Self> {
                $name::parse(value).ok()
            }
        }

        impl AsRef<str> for $name {
            fn as_ref(&self) -> &str {
                &self.0
            }
        }

        impl PartialEq<str> for $name {
            fn eq(&self, other: &str) -> bool {
                self.0 == other
            }
        }

        impl PartialEq<&str> for $name {
            fn eq(&self, other: &&str) -> bool {
                self.0 == *other
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }

        impl Serialize for $name {
            fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                serializer.serialize_str(&self.0)
            }
        }

        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                let text = String::deserialize(deserializer)?;
                Self::parse(&text).map_err(de::Error::custom)
            }
        }

        #[cfg(feature = "openapi")]
        impl utoipa::PartialSchema for $name {
            fn schema() -> RefOr<Schema> {
                ObjectBuilder::new()
                    .schema_type(Type::String)
                    .pattern(Some(Self::PATTERN))
                    .max_length(Some($prefix.len() + 33))
                    .description(Some(Self::EXPECTS))
                    .into()
            }
        }

        #[cfg(feature = "openapi")]
        impl utoipa::ToSchema for $name {}
    };
}

id_type!(
    /// An organization: `org_…`.
    OrganizationId, "org", "organization"
);
id_type!(
    /// An API key (its record, not its secret): `key_…`.
    ApiKeyId, "key", "key", "API key"
);
id_type!(
    /// A property: `prop_…`.
    PropertyId, "prop", "property"
);
id_type!(
    /// A job: `job_…`.
    JobId, "job", "job"
);
id_type!(
    /// An issue: `iss_…`.
    IssueId, "iss", "issue"
);
id_type!(
    /// An event of the outbox: `evt_…`. Also the `webhook-id` of its deliveries.
    EventId, "evt", "event"
);
id_type!(
    /// A webhook endpoint: `wh_…`.
    WebhookId, "wh", "webhook"
);
id_type!(
    /// A media item (an uploaded video or image): `med_…`.
    MediaId, "med", "media item"
);
id_type!(
    /// A connected social channel: `ch_…`.
    ChannelId, "ch", "channel"
);
id_type!(
    /// A resumable (tus) upload, the `fileId` the upload forms accept: `upl_…`.
    UploadId, "upl", "upload"
);
id_type!(
    /// One delivery attempt in a webhook's log: `whd_…`.
    DeliveryId, "whd", "delivery"
);

/// A new id with an ad-hoc prefix: ordered by creation, also within a millisecond.
///
/// The order within a millisecond comes from a counter uuid keeps behind one lock for the
/// whole process; ids that need no such order use [`new_unordered_id`].
pub fn new_id(prefix: &str) -> String {
    prefixed(prefix, Uuid::now_v7())
}

/// A new id with an ad-hoc prefix, for values that are not records (request ids): the same
/// shape as [`new_id`]'s and ordered by millisecond, but random within one, so threads make
/// them without sharing a lock.
pub fn new_unordered_id(prefix: &str) -> String {
    let since_epoch = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    let at = uuid::Timestamp::from_unix(
        uuid::NoContext,
        since_epoch.as_secs(),
        since_epoch.subsec_nanos(),
    );
    prefixed(prefix, Uuid::new_v7(at))
}

fn prefixed(prefix: &str, uuid: Uuid) -> String {
    let mut id = String::with_capacity(prefix.len() + 1 + uuid::fmt::Simple::LENGTH);
    id.push_str(prefix);
    id.push('_');
    id.push_str(uuid.simple().encode_lower(&mut Uuid::encode_buffer()));
    id
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unordered_ids_have_the_same_shape_and_order_by_millisecond() {
        let before = new_id("req");
        std::thread::sleep(std::time::Duration::from_millis(2));
        let ids: Vec<String> = (0..1_000).map(|_| new_unordered_id("req")).collect();
        std::thread::sleep(std::time::Duration::from_millis(2));
        let after = new_id("req");
        for id in &ids {
            let hex = id.strip_prefix("req_").unwrap();
            assert_eq!(hex.len(), 32, "{id}");
            assert!(hex
                .bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)));
            // Version 7, RFC 4122 variant.
            assert_eq!(&hex[12..13], "7", "{id}");
            assert!("89ab".contains(&hex[16..17]), "{id}");
            assert!(before < *id && *id < after, "{before} {id} {after}");
        }
        let mut distinct = ids.clone();
        distinct.sort();
        distinct.dedup();
        assert_eq!(distinct.len(), ids.len());
    }

    #[test]
    fn ids_are_prefixed_ordered_and_checked() {
        let first = PropertyId::new();
        let second = PropertyId::new();
        assert!(first.as_str().starts_with("prop_"));
        assert_eq!(first.as_str().len(), "prop_".len() + 32);
        assert!(first < second);
        assert_eq!(PropertyId::parse(first.as_str()), Ok(first.clone()));
        assert!(PropertyId::parse("prop_").is_err());
        assert!(JobId::parse(first.as_str()).is_err());
        assert!(PropertyId::parse(&first.as_str().to_uppercase()).is_err());
        assert!(PropertyId::parse(&format!("{first}0")).is_err());
    }

    #[test]
    fn the_published_pattern_accepts_exactly_what_parse_accepts() {
        let pattern = regex::Regex::new(JobId::PATTERN).unwrap();
        let body = "0123456789abcdef0123456789abcdef";
        for value in [
            format!("job_{body}"),
            format!("job_{}", body.to_uppercase()),
            format!("job_{body}0"),
            format!("job_{}", &body[1..]),
            format!("prop_{body}"),
            format!("jobs_{body}"),
            format!("job-{body}"),
            format!("job_{body}\n"),
            String::new(),
        ]
        .into_iter()
        // One byte just outside the digits' and letters' ranges, anywhere in the body.
        .chain((0..32).flat_map(|at| {
            ['/', ':', '`', 'g', 'A', '\u{e9}'].map(|c| {
                let mut body: Vec<char> = body.chars().collect();
                body[at] = c;
                format!("job_{}", body.into_iter().collect::<String>())
            })
        })) {
            assert_eq!(
                pattern.is_match(&value),
                JobId::parse(&value).is_ok(),
                "{value:?}"
            );
        }
    }

    #[test]
    fn derived_ids_are_stable() {
        let a = JobId::derived(b"0123456789abcdef-more");
        assert_eq!(a, JobId::derived(b"0123456789abcdef-other"));
        assert!(JobId::parse(a.as_str()).is_ok());
        assert_eq!(
            JobId::derived(b"").as_str(),
            format!("job_{}", "0".repeat(32))
        );
    }
}
