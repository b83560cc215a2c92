//! The text fields of the upload forms: title, description, platforms, schedule, draft flag,
//! and each platform's settings, given as one JSON field per platform (`youtube`, ...) or as
//! flat fields (`youtubePrivacy`, `selectedYoutubeChannels`, ...). Where both name the same
//! setting, the nested JSON wins (docs/media.md).

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use crate::error::{Error, FieldError};
use crate::model::media::{MediaKind, Platform};
use crate::time::Timestamp;

/// Longest internal title.
pub const MAX_TITLE: usize = 200;
/// Longest internal description.
pub const MAX_DESCRIPTION: usize = 5_000;
/// Most accounts of one platform one upload can target.
pub const MAX_ACCOUNTS: usize = 20;
/// The latest cover frame a video's `coverTimestampMs` may name: the longest video a platform
/// with covers takes (Instagram Reels and Pinterest, 15 minutes). Each upload's own duration
/// is checked too ([`super::rules`]).
pub const COVER_MAX_MS: u64 = 15 * 60 * 1000;

/// The type of a setting.
#[derive(Debug, Clone, Copy)]
enum Kind {
    /// Text of at most this many characters (the platform's own limit).
    Text(usize),
    /// `true` or `false`.
    Bool,
    /// One of these values.
    Select(&'static [&'static str]),
    /// A list of account ids.
    Accounts,
    /// A whole number of milliseconds from 0 to this many.
    Millis(u64),
}

/// One setting: its nested key, its flat field, its type.
#[derive(Debug, Clone, Copy)]
struct Setting {
    nested: &'static str,
    flat: &'static str,
    kind: Kind,
}

const fn setting(nested: &'static str, flat: &'static str, kind: Kind) -> Setting {
    Setting { nested, flat, kind }
}

const YOUTUBE: &[Setting] = &[
    setting("title", "youtubeTitle", Kind::Text(100)),
    setting("description", "youtubeDescription", Kind::Text(5_000)),
    setting(
        "privacy",
        "youtubePrivacy",
        Kind::Select(&["public", "private", "unlisted"]),
    ),
    setting("autoPublish", "youtubeAutoPublish", Kind::Bool),
    setting("channels", "selectedYoutubeChannels", Kind::Accounts),
    setting("firstComment", "youtubeFirstComment", Kind::Text(10_000)),
];
const INSTAGRAM: &[Setting] = &[
    setting("caption", "instagramCaption", Kind::Text(2_200)),
    setting("autoPublish", "instagramAutoPublish", Kind::Bool),
    setting("accounts", "selectedInstagramAccounts", Kind::Accounts),
    setting("firstComment", "instagramFirstComment", Kind::Text(2_200)),
    setting(
        "coverTimestampMs",
        "instagramCoverTimestampMs",
        Kind::Millis(COVER_MAX_MS),
    ),
];
const TIKTOK: &[Setting] = &[
    setting("caption", "tiktokCaption", Kind::Text(2_200)),
    setting(
        "privacy",
        "tiktokPrivacy",
        Kind::Select(&["PUBLIC_TO_EVERYONE", "MUTUAL_FOLLOW_FRIENDS", "SELF_ONLY"]),
    ),
    setting("autoPublish", "tiktokAutoPublish", Kind::Bool),
    setting("accounts", "selectedTiktokAccounts", Kind::Accounts),
    setting("disableComment", "tiktokDisableComment", Kind::Bool),
    setting("disableDuet", "tiktokDisableDuet", Kind::Bool),
    setting("disableStitch", "tiktokDisableStitch", Kind::Bool),
    setting(
        "coverTimestampMs",
        "tiktokCoverTimestampMs",
        Kind::Millis(COVER_MAX_MS),
    ),
];
const LINKEDIN: &[Setting] = &[
    setting("comment", "linkedinComment", Kind::Text(3_000)),
    setting("autoPublish", "linkedinAutoPublish", Kind::Bool),
    setting("accounts", "selectedLinkedinAccounts", Kind::Accounts),
    setting("firstComment", "linkedinFirstComment", Kind::Text(1_250)),
];
const PINTEREST: &[Setting] = &[
    setting("title", "pinterestTitle", Kind::Text(100)),
    setting("description", "pinterestDescription", Kind::Text(500)),
    setting("boardId", "pinterestBoardId", Kind::Text(64)),
    setting("autoPublish", "pinterestAutoPublish", Kind::Bool),
    setting("accounts", "selectedPinterestAccounts", Kind::Accounts),
    setting(
        "coverTimestampMs",
        "pinterestCoverTimestampMs",
        Kind::Millis(COVER_MAX_MS),
    ),
];

fn settings_of(platform: Platform) -> &'static [Setting] {
    match platform {
        Platform::Youtube => YOUTUBE,
        Platform::Instagram => INSTAGRAM,
        Platform::Tiktok => TIKTOK,
        Platform::Linkedin => LINKEDIN,
        Platform::Pinterest => PINTEREST,
    }
}

/// Whether a platform's settings ask to publish automatically: `autoPublish`, `true` when
/// not given.
pub fn auto_publish(settings: &Map<String, Value>) -> bool {
    settings
        .get("autoPublish")
        .and_then(Value::as_bool)
        .unwrap_or(true)
}

/// The form fields other than the file and the platform settings.
const COMMON_FIELDS: &[&str] = &[
    "title",
    "description",
    "platforms",
    "scheduledAt",
    "isDraft",
    "fileId",
];

/// One platform's choices in an upload.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PlatformChoice {
    /// The settings given (nested keys), account lists left out.
    pub settings: Map<String, Value>,
    /// The accounts asked for; `None` when none were named.
    pub accounts: Option<Vec<String>>,
}

/// The text fields of an upload, checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UploadFields {
    /// Internal title.
    pub title: Option<String>,
    /// Internal description.
    pub description: Option<String>,
    /// The chosen platforms, each once, in the order of [`Platform::ALL`].
    pub platforms: Vec<Platform>,
    /// When to publish.
    pub scheduled_at: Option<Timestamp>,
    /// Save as a draft.
    pub is_draft: bool,
    /// `fileId`: a finished resumable upload to use instead of a file part.
    pub file_id: Option<String>,
    /// The settings of each chosen platform (settings given for a platform that is not
    /// chosen are checked, then dropped).
    pub choices: BTreeMap<Platform, PlatformChoice>,
}

/// A `PATCH` of a media item, read from the client's JSON object by [`MediaPatch::from_json`]
/// (at the edge): what to change. [`Media::update`](crate::Media::update) checks it
/// against the item, as an upload of the changed item would be checked.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct MediaPatch {
    /// `title`: `Some(None)` (a `null`) clears it.
    pub title: Option<Option<String>>,
    /// `description`: `Some(None)` clears it.
    pub description: Option<Option<String>>,
    /// `scheduledAt` as sent (RFC 3339, checked as an upload's is): `Some(None)` unschedules.
    pub scheduled_at: Option<Option<String>>,
    /// The settings to change of each platform named: a `null` removes one.
    pub settings: BTreeMap<Platform, Map<String, Value>>,
}

impl MediaPatch {
    /// Reads a `PATCH` body: an object of `title`, `description`, `scheduledAt` (each a string
    /// or `null`) and platforms' settings (an object each). Every problem is reported, each
    /// naming its member.
    pub fn from_json(body: &Value) -> Result<MediaPatch, Error> {
        let Value::Object(members) = body else {
            return Err(Error::invalid(
                "body",
                "must be a JSON object of the fields to change",
            ));
        };
        if members.is_empty() {
            return Err(Error::invalid(
                "body",
                "names nothing to change: scheduledAt, title, description or a platform's \
                 settings",
            ));
        }
        let mut patch = MediaPatch::default();
        let mut problems = Vec::new();
        let mut problem = |field: &str, message: &str| {
            problems.push(FieldError {
                field: field.to_owned(),
                message: message.to_owned(),
            })
        };
        for (key, value) in members {
            let text = match key.as_str() {
                "title" => Some(&mut patch.title),
                "description" => Some(&mut patch.description),
                "scheduledAt" => Some(&mut patch.scheduled_at),
                _ => None,
            };
            if let Some(slot) = text {
                match value {
                    Value::Null => *slot = Some(None),
                    Value::String(text) => *slot = Some(Some(text.clone())),
                    _ => problem(key, "must be a string or null"),
                }
                continue;
            }
            match (Platform::parse(key), value) {
                (Some(platform), Value::Object(changes)) => {
                    patch.settings.insert(platform, changes.clone());
                }
                (Some(_), _) => problem(key, "must be an object of settings"),
                // A member with no name names nothing: the body is at fault.
                (None, _) if key.is_empty() => problem(
                    "body",
                    "has a member with an empty name; send scheduledAt, title, description or \
                     a platform's settings",
                ),
                (None, _) => problem(
                    key,
                    "cannot be changed: send scheduledAt, title, description or a platform's \
                     settings",
                ),
            }
        }
        if problems.is_empty() {
            Ok(patch)
        } else {
            Err(Error::invalid_fields(problems))
        }
    }
}

/// Checks the text fields of an upload form of `kind`. Every problem is reported, each
/// naming its field (`platforms`, `youtube.privacy`, `tiktokPrivacy`, ...).
///
/// One piece: the form's fields read in the order the specification lists them, every problem
/// collected into one `400`.
pub fn parse_upload_fields(
    kind: MediaKind,
    fields: &[(String, String)],
) -> Result<UploadFields, Error> {
    let mut problems: Vec<FieldError> = Vec::new();
    let mut problem = |field: &str, message: String| {
        problems.push(FieldError {
            field: field.to_owned(),
            message,
        })
    };
    let mut by_name: BTreeMap<&str, &str> = BTreeMap::new();
    for (name, value) in fields {
        let known = COMMON_FIELDS.contains(&name.as_str())
            || Platform::parse(name).is_some()
            || Platform::ALL
                .iter()
                .any(|p| settings_of(*p).iter().any(|s| s.flat == name));
        if !known {
            problem(name, "is not a field of this form".into());
        } else if value.contains('\0') {
            problem(name, "must not contain a NUL character".into());
        } else if by_name.insert(name, value).is_some() {
            problem(name, "is given more than once".into());
        }
    }

    let text = |name: &str, max: usize, problem: &mut dyn FnMut(&str, String)| {
        by_name.get(name).and_then(|value| {
            let value = value.trim();
            if value.chars().count() > max {
                problem(name, format!("must be at most {max} characters"));
                None
            } else {
                (!value.is_empty()).then(|| value.to_owned())
            }
        })
    };
    let title = text("title", MAX_TITLE, &mut problem);
    let description = text("description", MAX_DESCRIPTION, &mut problem);
    let file_id = text("fileId", 64, &mut problem);

    let platforms = match by_name.get("platforms") {
        None if kind == MediaKind::Video => {
            problem(
                "platforms",
                "is required: a JSON array of platform names".into(),
            );
            Vec::new()
        }
        None => Vec::new(),
        Some(raw) => parse_platforms(kind, raw).unwrap_or_else(|message| {
            problem("platforms", message);
            Vec::new()
        }),
    };
    let scheduled_at = by_name.get("scheduledAt").and_then(|raw| {
        let parsed = Timestamp::parse_rfc3339(raw.trim());
        if parsed.is_none() {
            problem(
                "scheduledAt",
                "must be an ISO 8601 date and time with a time zone, e.g. 2026-12-01T09:30:00Z"
                    .into(),
            );
        }
        parsed
    });
    let is_draft = match by_name.get("isDraft").map(|v| v.trim()) {
        None | Some("false") => false,
        Some("true") => true,
        Some(_) => {
            problem("isDraft", "must be true or false".into());
            false
        }
    };

    let mut choices = BTreeMap::new();
    for platform in Platform::ALL {
        let given_nested = by_name.contains_key(platform.as_str());
        let given_flat = settings_of(platform)
            .iter()
            .any(|s| by_name.contains_key(s.flat));
        if !platform.accepts(kind) && (given_nested || given_flat) {
            problem(
                platform.as_str(),
                format!("{} takes no {}s", platform.as_str(), kind.as_str()),
            );
            continue;
        }
        let choice = platform_choice(platform, &by_name, &mut problem);
        if platforms.contains(&platform) {
            choices.insert(platform, choice);
        }
    }

    if !problems.is_empty() {
        return Err(Error::invalid_fields(problems));
    }
    Ok(UploadFields {
        title,
        description,
        platforms,
        scheduled_at,
        is_draft,
        file_id,
        choices,
    })
}

/// `platforms`: a JSON array of distinct platform names that take media of `kind`.
fn parse_platforms(kind: MediaKind, raw: &str) -> Result<Vec<Platform>, String> {
    let names: Vec<Value> = match serde_json::from_str(raw) {
        Ok(Value::Array(names)) => names,
        _ => {
            return Err(format!(
                "must be a JSON array of platform names, e.g. [\"instagram\", \"tiktok\"]; got {}",
                shorten(raw)
            ))
        }
    };
    let mut platforms = Vec::new();
    for name in names {
        let platform = name.as_str().and_then(Platform::parse).ok_or_else(|| {
            format!(
                "{} is not a platform: youtube, instagram, tiktok, linkedin or pinterest",
                crate::text::excerpt(&name.to_string(), 40)
            )
        })?;
        if !platform.accepts(kind) {
            return Err(format!("{} takes no {}s", platform.as_str(), kind.as_str()));
        }
        if platforms.contains(&platform) {
            return Err(format!("{} is listed twice", platform.as_str()));
        }
        platforms.push(platform);
    }
    platforms.sort();
    Ok(platforms)
}

/// A value the client sent, quoted and cut to 40 characters.
pub(crate) fn shorten(raw: &str) -> String {
    format!("{:?}", crate::text::excerpt(raw, 40))
}

/// One platform's settings from its nested JSON field and its flat fields; a nested value
/// wins over a flat one.
fn platform_choice(
    platform: Platform,
    fields: &BTreeMap<&str, &str>,
    problem: &mut dyn FnMut(&str, String),
) -> PlatformChoice {
    let name = platform.as_str();
    let nested: Map<String, Value> = match fields.get(name) {
        None => Map::new(),
        Some(raw) => match crate::json::parse_strict(raw.as_bytes()) {
            Ok(Value::Object(object)) => object,
            Err(refused @ crate::json::StrictJsonError::Field { .. }) => {
                problem(&refused.field(name, true), refused.message());
                Map::new()
            }
            _ => {
                problem(name, format!("must be a JSON object of {name}'s settings"));
                Map::new()
            }
        },
    };
    let table = settings_of(platform);
    for key in nested.keys() {
        if !table.iter().any(|s| s.nested == key) {
            let known: Vec<&str> = table.iter().map(|s| s.nested).collect();
            problem(
                &format!("{name}.{}", crate::text::excerpt(key, 40)),
                format!("is not a setting of {name} ({})", known.join(", ")),
            );
        }
    }
    let mut choice = PlatformChoice::default();
    for setting in table {
        let value = match nested.get(setting.nested) {
            Some(value) => nested_value(setting.kind, value)
                .map_err(|m| (format!("{name}.{}", setting.nested), m)),
            None => match fields.get(setting.flat) {
                Some(raw) => {
                    flat_value(setting.kind, raw).map_err(|m| (setting.flat.to_owned(), m))
                }
                None => continue,
            },
        };
        match value {
            Ok(Value::Array(accounts)) => {
                choice.accounts = Some(
                    accounts
                        .into_iter()
                        .filter_map(|a| a.as_str().map(str::to_owned))
                        .collect(),
                );
            }
            Ok(Value::Null) => {}
            Ok(value) => {
                choice.settings.insert(setting.nested.to_owned(), value);
            }
            Err((field, message)) => problem(&field, message),
        }
    }
    choice
}

/// A nested setting's JSON value, checked against its type (`null` is as if not given).
fn nested_value(kind: Kind, value: &Value) -> Result<Value, String> {
    match (kind, value) {
        (_, Value::Null) => Ok(Value::Null),
        (Kind::Text(max), Value::String(text)) => checked_text(max, text),
        (Kind::Bool, Value::Bool(_)) => Ok(value.clone()),
        (Kind::Select(allowed), Value::String(text)) => checked_choice(allowed, text),
        (Kind::Accounts, Value::Array(items)) => {
            let ids: Option<Vec<&str>> = items.iter().map(Value::as_str).collect();
            checked_accounts(ids.ok_or("must be an array of account id strings")?)
        }
        (Kind::Millis(max), Value::Number(number)) => match number.as_u64() {
            Some(ms) => checked_millis(max, ms),
            None => Err(expected(kind)),
        },
        (kind, _) => Err(expected(kind)),
    }
}

/// A flat field's text, read as its type: `true`/`false`; a JSON array or a comma-separated
/// list of account ids.
fn flat_value(kind: Kind, raw: &str) -> Result<Value, String> {
    let raw = raw.trim();
    match kind {
        Kind::Text(max) => checked_text(max, raw),
        Kind::Bool => match raw {
            "true" => Ok(Value::Bool(true)),
            "false" => Ok(Value::Bool(false)),
            _ => Err(expected(kind)),
        },
        Kind::Select(allowed) => checked_choice(allowed, raw),
        Kind::Accounts if raw.starts_with('[') => match serde_json::from_str::<Vec<String>>(raw) {
            Ok(ids) => checked_accounts(ids.iter().map(String::as_str).collect()),
            Err(_) => Err("must be a JSON array of account id strings".into()),
        },
        Kind::Accounts => checked_accounts(
            raw.split(',')
                .map(str::trim)
                .filter(|id| !id.is_empty())
                .collect(),
        ),
        Kind::Millis(max) => {
            let digits =
                !raw.is_empty() && raw.len() <= 19 && raw.bytes().all(|b| b.is_ascii_digit());
            match raw.parse::<u64>() {
                Ok(ms) if digits => checked_millis(max, ms),
                _ => Err(expected(kind)),
            }
        }
    }
}

fn expected(kind: Kind) -> String {
    match kind {
        Kind::Text(max) => format!("must be text of at most {max} characters"),
        Kind::Bool => "must be true or false".into(),
        Kind::Select(allowed) => format!("must be one of {}", allowed.join(", ")),
        Kind::Accounts => "must be an array of account ids".into(),
        Kind::Millis(max) => format!("must be a whole number of milliseconds from 0 to {max}"),
    }
}

fn checked_millis(max: u64, ms: u64) -> Result<Value, String> {
    if ms > max {
        Err(format!("must be at most {max} milliseconds"))
    } else {
        Ok(Value::from(ms))
    }
}

fn checked_text(max: usize, text: &str) -> Result<Value, String> {
    if text.contains('\0') {
        Err("must not contain a NUL character".to_owned())
    } else if text.chars().count() > max {
        Err(format!("must be at most {max} characters"))
    } else {
        Ok(Value::String(text.to_owned()))
    }
}

fn checked_choice(allowed: &[&str], text: &str) -> Result<Value, String> {
    if allowed.contains(&text) {
        Ok(Value::String(text.to_owned()))
    } else {
        Err(format!(
            "must be one of {}; got {}",
            allowed.join(", "),
            shorten(text)
        ))
    }
}

fn checked_accounts(ids: Vec<&str>) -> Result<Value, String> {
    if ids.len() > MAX_ACCOUNTS {
        return Err(format!("names more than {MAX_ACCOUNTS} accounts"));
    }
    let mut unique: Vec<&str> = Vec::new();
    for id in ids {
        if id.is_empty() || id.len() > 256 || id.chars().any(char::is_control) {
            return Err("must hold account ids of 1 to 256 characters".into());
        }
        if !unique.contains(&id) {
            unique.push(id);
        }
    }
    Ok(Value::Array(
        unique
            .into_iter()
            .map(|id| Value::String(id.to_owned()))
            .collect(),
    ))
}

/// The name of the component schema of `platform`'s settings in the OpenAPI document.
pub fn schema_name(platform: Platform) -> &'static str {
    match platform {
        Platform::Youtube => "YoutubeSettings",
        Platform::Instagram => "InstagramSettings",
        Platform::Tiktok => "TiktokSettings",
        Platform::Linkedin => "LinkedinSettings",
        Platform::Pinterest => "PinterestSettings",
    }
}

/// What a settings schema describes (see [`json_schema`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum SettingsSchema {
    /// The JSON object of the upload form's field named after the platform: every setting,
    /// the account list included, each may be `null` (as if not given).
    Form,
    /// `settings` of an item on the platform, as stored: the settings given, without nulls
    /// and without the account list (which is the platform's `accounts`).
    Stored,
}

/// A JSON Schema of `platform`'s settings, made from the table the forms are checked with,
/// so the document says what is checked.
pub fn json_schema(platform: Platform, of: SettingsSchema) -> Value {
    let form = of == SettingsSchema::Form;
    let typed = |name: &str| -> Value {
        if form {
            serde_json::json!([name, "null"])
        } else {
            Value::from(name)
        }
    };
    let mut properties = Map::new();
    for setting in settings_of(platform) {
        let mut schema = match setting.kind {
            Kind::Accounts if !form => continue,
            Kind::Text(max) => serde_json::json!({"type": typed("string"), "maxLength": max}),
            Kind::Bool => serde_json::json!({"type": typed("boolean")}),
            Kind::Select(allowed) => {
                let mut values: Vec<Value> = allowed.iter().map(|v| Value::from(*v)).collect();
                if form {
                    values.push(Value::Null);
                }
                serde_json::json!({"type": typed("string"), "enum": values})
            }
            Kind::Accounts => serde_json::json!({
                "type": typed("array"),
                "items": {"type": "string"},
                "maxItems": MAX_ACCOUNTS,
                "description": "The accounts to post to (default: every connected one)",
            }),
            Kind::Millis(max) => serde_json::json!({
                "type": typed("integer"),
                "minimum": 0,
                "maximum": max,
                "description": "Videos: the frame shown as the cover, in milliseconds from the \
                    start (within the video)",
            }),
        };
        if setting.nested == "autoPublish" {
            schema["description"] =
                "Publish automatically (default true); false leaves the post for a person".into();
        }
        if setting.nested == "firstComment" {
            schema["description"] = "A comment posted under the post once it is published \
                (once; its failure does not fail the post)"
                .into();
        }
        if form {
            schema["x-flat-field"] = Value::from(setting.flat);
        }
        properties.insert(setting.nested.to_owned(), schema);
    }
    let description = if form {
        format!(
            "{}'s settings; each may also be given as its own form field (`x-flat-field`), which \
             the nested value wins over",
            platform.label()
        )
    } else {
        format!("{}'s settings, as given with the upload", platform.label())
    };
    serde_json::json!({
        "type": "object",
        "description": description,
        "properties": properties,
        "additionalProperties": false,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn form(fields: &[(&str, &str)]) -> Vec<(String, String)> {
        fields
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    fn fields_of(error: Error) -> Vec<String> {
        match error {
            Error::Validation { details, .. } => details.into_iter().map(|d| d.field).collect(),
            other => panic!("not a validation error: {other:?}"),
        }
    }

    proptest::proptest! {
        /// A flat field's text, whatever it is, reads as its setting's type or is refused:
        /// milliseconds are whole, from 0 to the bound, and read back as sent.
        #[test]
        fn any_flat_text_reads_as_its_type_or_is_refused(raw in "\\PC{0,24}|[0-9 +-]{0,24}") {
            let kinds = [
                Kind::Millis(COVER_MAX_MS),
                Kind::Text(100),
                Kind::Bool,
                Kind::Select(&["public", "private"]),
                Kind::Accounts,
            ];
            for kind in kinds {
                match (kind, flat_value(kind, &raw)) {
                    (Kind::Millis(max), Ok(value)) => {
                        let ms = value.as_u64().expect("a whole number");
                        proptest::prop_assert!(ms <= max);
                        proptest::prop_assert_eq!(raw.trim().parse::<u64>(), Ok(ms));
                    }
                    (Kind::Bool, Ok(value)) => proptest::prop_assert!(value.is_boolean()),
                    (Kind::Accounts, Ok(value)) => proptest::prop_assert!(value.is_array()),
                    (_, Ok(value)) => proptest::prop_assert!(value.is_string()),
                    (_, Err(message)) => proptest::prop_assert!(message.starts_with("must")),
                }
            }
        }

        /// A nested setting's JSON number is milliseconds only when whole and in range.
        #[test]
        fn a_nested_cover_is_a_whole_number_in_range(number in proptest::num::f64::ANY, whole in proptest::num::i64::ANY) {
            for value in [serde_json::json!(number), serde_json::json!(whole)] {
                let read = nested_value(Kind::Millis(COVER_MAX_MS), &value);
                let fits = value.as_u64().is_some_and(|ms| ms <= COVER_MAX_MS);
                proptest::prop_assert_eq!(read.is_ok(), fits || value.is_null(), "{}", value);
            }
        }
    }

    #[test]
    fn a_cover_frame_is_whole_milliseconds_within_the_longest_video() {
        let parsed = parse_upload_fields(
            MediaKind::Video,
            &form(&[
                ("platforms", r#"["instagram", "tiktok", "pinterest"]"#),
                ("instagram", r#"{"coverTimestampMs": 1500}"#),
                ("tiktokCoverTimestampMs", " 0 "),
                ("pinterestCoverTimestampMs", "900000"),
            ]),
        )
        .unwrap();
        let cover = |platform| parsed.choices[&platform].settings["coverTimestampMs"].clone();
        assert_eq!(cover(Platform::Instagram), Value::from(1500));
        assert_eq!(cover(Platform::Tiktok), Value::from(0));
        assert_eq!(cover(Platform::Pinterest), Value::from(COVER_MAX_MS));
        for (field, value) in [
            ("instagram", r#"{"coverTimestampMs": -1}"#),
            ("instagram", r#"{"coverTimestampMs": 1.5}"#),
            ("instagram", r#"{"coverTimestampMs": "1500"}"#),
            ("instagram", r#"{"coverTimestampMs": 900001}"#),
            ("instagramCoverTimestampMs", "-1"),
            ("instagramCoverTimestampMs", "1e3"),
            ("instagramCoverTimestampMs", "+5"),
            ("instagramCoverTimestampMs", "99999999999999999999999"),
            ("instagramCoverTimestampMs", ""),
        ] {
            let fields = [("platforms", r#"["instagram"]"#), (field, value)];
            let error = parse_upload_fields(MediaKind::Video, &form(&fields)).unwrap_err();
            // A flat field's problem names it; a nested one's, the setting's path.
            let named = if field == "instagram" {
                "instagram.coverTimestampMs"
            } else {
                field
            };
            assert_eq!(fields_of(error), vec![named.to_owned()], "{field}={value}");
        }
        // YouTube and LinkedIn have no cover setting.
        let fields = [
            ("platforms", r#"["youtube"]"#),
            ("youtube", r#"{"coverTimestampMs": 5}"#),
        ];
        assert!(parse_upload_fields(MediaKind::Video, &form(&fields)).is_err());
    }

    #[test]
    fn a_full_video_form_is_read() {
        let parsed = parse_upload_fields(
            MediaKind::Video,
            &form(&[
                ("title", " Launch "),
                ("platforms", r#"["tiktok", "youtube"]"#),
                ("scheduledAt", "2026-12-01T09:30:00Z"),
                ("isDraft", "false"),
                (
                    "youtube",
                    r#"{"privacy": "unlisted", "channels": ["UC1", "UC1"], "title": "Nested"}"#,
                ),
                ("youtubeTitle", "Flat loses"),
                ("youtubeAutoPublish", "true"),
                ("tiktokPrivacy", "SELF_ONLY"),
                ("selectedTiktokAccounts", "a1, a2"),
                ("instagramCaption", "not chosen, dropped"),
            ]),
        )
        .unwrap();
        assert_eq!(parsed.title.as_deref(), Some("Launch"));
        assert_eq!(parsed.platforms, vec![Platform::Youtube, Platform::Tiktok]);
        assert!(!parsed.is_draft);
        let youtube = &parsed.choices[&Platform::Youtube];
        assert_eq!(youtube.settings["title"], "Nested");
        assert_eq!(youtube.settings["privacy"], "unlisted");
        assert_eq!(youtube.settings["autoPublish"], true);
        assert_eq!(youtube.accounts, Some(vec!["UC1".to_owned()]));
        let tiktok = &parsed.choices[&Platform::Tiktok];
        assert_eq!(tiktok.settings["privacy"], "SELF_ONLY");
        assert_eq!(
            tiktok.accounts,
            Some(vec!["a1".to_owned(), "a2".to_owned()])
        );
        assert!(!parsed.choices.contains_key(&Platform::Instagram));
    }

    #[test]
    fn every_problem_names_its_field() {
        let error = parse_upload_fields(
            MediaKind::Video,
            &form(&[
                ("platforms", r#"["youtube"]"#),
                ("youtube", r#"{"privacy": "secret", "colour": 1}"#),
                ("tiktokPrivacy", "EVERYONE"),
                ("isDraft", "yes"),
                ("scheduledAt", "tomorrow"),
                ("titel", "typo"),
            ]),
        )
        .unwrap_err();
        let mut fields = fields_of(error);
        fields.sort();
        assert_eq!(
            fields,
            [
                "isDraft",
                "scheduledAt",
                "tiktokPrivacy",
                "titel",
                "youtube.colour",
                "youtube.privacy"
            ]
        );
    }

    #[test]
    fn platforms_must_be_a_json_array_of_known_names() {
        for bad in [
            "youtube",
            r#"["myspace"]"#,
            r#"["tiktok", "tiktok"]"#,
            "{}",
            r#"[1]"#,
        ] {
            let error =
                parse_upload_fields(MediaKind::Video, &form(&[("platforms", bad)])).unwrap_err();
            assert_eq!(fields_of(error), ["platforms"], "{bad}");
        }
        let missing = parse_upload_fields(MediaKind::Video, &form(&[])).unwrap_err();
        assert_eq!(fields_of(missing), ["platforms"]);
        // Images may leave platforms out, and take no YouTube.
        assert!(parse_upload_fields(MediaKind::Image, &form(&[])).is_ok());
        let youtube =
            parse_upload_fields(MediaKind::Image, &form(&[("platforms", r#"["youtube"]"#)]))
                .unwrap_err();
        assert_eq!(fields_of(youtube), ["platforms"]);
        let settings =
            parse_upload_fields(MediaKind::Image, &form(&[("youtubePrivacy", "public")]))
                .unwrap_err();
        assert_eq!(fields_of(settings), ["youtube"]);
    }

    #[test]
    fn texts_respect_the_platforms_limits() {
        let long = "x".repeat(101);
        let error = parse_upload_fields(
            MediaKind::Video,
            &form(&[("platforms", r#"["pinterest"]"#), ("pinterestTitle", &long)]),
        )
        .unwrap_err();
        assert_eq!(fields_of(error), ["pinterestTitle"]);
        let repeated = vec![
            ("platforms".to_owned(), r#"["pinterest"]"#.to_owned()),
            ("title".to_owned(), "a".to_owned()),
            ("title".to_owned(), "b".to_owned()),
        ];
        let error = parse_upload_fields(MediaKind::Video, &repeated).unwrap_err();
        assert_eq!(fields_of(error), ["title"]);
    }
}
