//! The text a store keeps: every character as given, but U+0000, which is kept as U+FFFD
//! ([`crate::text`]'s rule). PostgreSQL's `text` and `jsonb` cannot hold a NUL; rather than
//! fail a scan or a request on one, both backends keep what every record they are given holds
//! through [`stored`], so the in-memory store answers as PostgreSQL does. The conformance
//! suite writes a NUL into every text field of every aggregate's records
//! (`testing::text`).
//!
//! Each record lists its text fields once, in [`text_fields!`] below; a field left out would
//! reach PostgreSQL unchanged, and the conformance behaviour for its aggregate would fail.

use std::borrow::Cow;
use std::collections::BTreeMap;

use serde_json::{Map, Value};

use crate::model::gsc::{GscAccount, GscRow, GscSnapshot, NewSnapshot};
use crate::model::media::{
    Channel, FollowUp, MediaEdit, MediaItem, Platform, PlatformTarget, Post, PostFailure,
    StoredFile, Upload, UploadPart,
};
use crate::model::{Issue, JobRecord, JobSubject, NewEvent, Organization, Property, Webhook};
use crate::store::{
    AttemptOutcome, FetchedPage, Finish, KeptResponse, NewFinding, ScanFindings, StoredResponse,
    WebhookChanges,
};
use crate::text::without_nul;

/// A value whose text a store keeps: it can tell whether it holds a U+0000 and replace each
/// with U+FFFD.
pub trait StoredText {
    /// Whether any of its text holds U+0000.
    fn has_nul(&self) -> bool;
    /// Replaces each U+0000 of its text with U+FFFD.
    fn replace_nul(&mut self);
}

/// `value` as a store keeps it: borrowed when it holds no U+0000 (the common case costs one
/// scan of its text), else a copy with each replaced by U+FFFD.
pub fn stored<T: StoredText + Clone>(value: &T) -> Cow<'_, T> {
    if value.has_nul() {
        let mut copy = value.clone();
        copy.replace_nul();
        Cow::Owned(copy)
    } else {
        Cow::Borrowed(value)
    }
}

/// `values` as a store keeps them: borrowed when none holds a U+0000.
pub fn stored_all<T: StoredText + Clone>(values: &[T]) -> Cow<'_, [T]> {
    if values.iter().any(T::has_nul) {
        let mut copy = values.to_vec();
        copy.replace_nul();
        Cow::Owned(copy)
    } else {
        Cow::Borrowed(values)
    }
}

/// `text` as a store keeps it (for the text a store method takes on its own, not in a record).
pub fn stored_str(text: &str) -> Cow<'_, str> {
    without_nul(text)
}

impl StoredText for String {
    fn has_nul(&self) -> bool {
        self.contains('\0')
    }
    fn replace_nul(&mut self) {
        if let Cow::Owned(kept) = without_nul(self) {
            *self = kept;
        }
    }
}

impl<T: StoredText> StoredText for Option<T> {
    fn has_nul(&self) -> bool {
        self.as_ref().is_some_and(T::has_nul)
    }
    fn replace_nul(&mut self) {
        if let Some(value) = self {
            value.replace_nul();
        }
    }
}

impl<T: StoredText> StoredText for Vec<T> {
    fn has_nul(&self) -> bool {
        self.iter().any(T::has_nul)
    }
    fn replace_nul(&mut self) {
        self.iter_mut().for_each(T::replace_nul);
    }
}

impl<A: StoredText, B: StoredText> StoredText for (A, B) {
    fn has_nul(&self) -> bool {
        self.0.has_nul() || self.1.has_nul()
    }
    fn replace_nul(&mut self) {
        self.0.replace_nul();
        self.1.replace_nul();
    }
}

impl StoredText for Value {
    fn has_nul(&self) -> bool {
        match self {
            Value::String(text) => text.has_nul(),
            Value::Array(items) => items.iter().any(Value::has_nul),
            Value::Object(members) => members.has_nul(),
            Value::Null | Value::Bool(_) | Value::Number(_) => false,
        }
    }
    fn replace_nul(&mut self) {
        match self {
            Value::String(text) => text.replace_nul(),
            Value::Array(items) => items.iter_mut().for_each(Value::replace_nul),
            Value::Object(members) => members.replace_nul(),
            Value::Null | Value::Bool(_) | Value::Number(_) => {}
        }
    }
}

/// Maps keyed by text: a key with U+0000 is replaced too, the map rebuilt (two keys that
/// differ only by a NUL and a U+FFFD in its place become one, the later kept).
macro_rules! keyed_by_text {
    ($([$($generic:tt)*] $map:ty, $value:ty;)+) => {$(
        impl<$($generic)*> StoredText for $map {
            fn has_nul(&self) -> bool {
                self.iter().any(|(key, value)| key.has_nul() || value.has_nul())
            }
            fn replace_nul(&mut self) {
                if self.keys().any(String::has_nul) {
                    *self = std::mem::take(self)
                        .into_iter()
                        .map(|(key, value)| (without_nul(&key).into_owned(), value))
                        .collect();
                }
                self.values_mut().for_each(<$value>::replace_nul);
            }
        }
    )+};
}

keyed_by_text! {
    [] Map<String, Value>, Value;
    [V: StoredText] BTreeMap<String, V>, V;
}

impl<V: StoredText> StoredText for BTreeMap<Platform, V> {
    fn has_nul(&self) -> bool {
        self.values().any(V::has_nul)
    }
    fn replace_nul(&mut self) {
        self.values_mut().for_each(V::replace_nul);
    }
}

impl StoredText for AttemptOutcome {
    fn has_nul(&self) -> bool {
        match self {
            AttemptOutcome::Completed(result) => result.has_nul(),
            AttemptOutcome::Failed(error)
            | AttemptOutcome::Retry { error, .. }
            | AttemptOutcome::Internal { error, .. } => error.has_nul(),
        }
    }
    fn replace_nul(&mut self) {
        match self {
            AttemptOutcome::Completed(result) => result.replace_nul(),
            AttemptOutcome::Failed(error)
            | AttemptOutcome::Retry { error, .. }
            | AttemptOutcome::Internal { error, .. } => error.replace_nul(),
        }
    }
}

/// Lists the text fields of records: each field's type is [`StoredText`].
macro_rules! text_fields {
    ($($record:ty { $($field:ident),+ $(,)? })+) => {$(
        impl StoredText for $record {
            fn has_nul(&self) -> bool {
                $(self.$field.has_nul())||+
            }
            fn replace_nul(&mut self) {
                $(self.$field.replace_nul();)+
            }
        }
    )+};
}

text_fields! {
    Organization { name, shop_domain }
    Property { name, url, gsc_site_url }
    JobSubject { property_name, tenant_label, shop_domain }
    JobRecord { job_type, payload, subject, error, result }
    Finish { outcome }
    NewEvent { data }
    Issue { issue_type, title, url, evidence, how_to_fix, subject }
    NewFinding { issue_type, title, url, subject, evidence, how_to_fix }
    FetchedPage { url }
    ScanFindings { findings, reached, pages }
    StoredResponse { body }
    KeptResponse { scope, response }
    Webhook { name, url }
    WebhookChanges { name, url }
    GscAccount { account_email }
    GscRow { key }
    GscSnapshot { site_url }
    NewSnapshot { snapshot, queries, pages }
    StoredFile { key, name }
    FollowUp { id, error }
    PostFailure { code, message }
    Post { checkpoint, remote_id, url, error, failure, first_comment, thumbnail }
    PlatformTarget { accounts, settings, remote_id, url, error, posts, thumbnail }
    MediaItem { title, description, file, carousel, targets }
    MediaEdit { title, description, settings }
    Channel { account_id, name, thumbnail, disconnected, default_board }
    UploadPart { key }
    Upload { metadata, parts }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_without_nul_is_borrowed_and_one_with_is_replaced_everywhere() {
        let clean = Value::from("clean");
        assert!(matches!(stored(&clean), Cow::Borrowed(_)));
        let value = serde_json::json!({"a\u{0}": ["x\u{0}y", {"k": "\u{0}"}], "n": 1});
        let kept = stored(&value).into_owned();
        assert_eq!(
            kept,
            serde_json::json!({"a\u{FFFD}": ["x\u{FFFD}y", {"k": "\u{FFFD}"}], "n": 1})
        );
        assert!(!kept.has_nul());
    }
}
