//! The media API's schemas, which the `#[utoipa::path]` attributes of its handlers
//! (`routes/media.rs`, `routes/uploads.rs`) name: its success envelopes (component schemas),
//! the upload forms and change bodies, and the parameters and headers whose rules a type of
//! ours states. Each is a type with a hand-made [`PartialSchema`], as `xf_core::params`'s
//! are, because what it says comes from the tables the requests are checked with (the
//! platforms' settings, the text limits, the statuses). The shared decoration (security,
//! errors, headers) is [`crate::openapi`]'s, as for the developer API.

use std::borrow::Cow;

use serde_json::Value;
use utoipa::openapi::extensions::Extensions;
use utoipa::openapi::schema::{
    AdditionalProperties, ArrayBuilder, KnownFormat, ObjectBuilder, Schema, SchemaFormat,
    SchemaType, Type,
};
use utoipa::openapi::{Ref, RefOr};
use utoipa::{PartialSchema, ToSchema};
use xf_core::media::rules::CAROUSEL_MAX;
use xf_core::media::settings::{self, MAX_DESCRIPTION, MAX_TITLE};
use xf_core::media::{MediaStatus, Platform};

/// A JSON Schema 2020-12 keyword that utoipa's schema model has no field for (`const`,
/// `contentSchema`), carried by the extensions it writes into the schema object as they are.
/// One keyword per object, so the document's text is the same every time.
fn keyword(name: &str, value: Value) -> Option<Extensions> {
    Some([(name, value)].into_iter().collect())
}

fn string() -> ObjectBuilder {
    ObjectBuilder::new().schema_type(Type::String)
}

fn integer() -> ObjectBuilder {
    ObjectBuilder::new().schema_type(Type::Integer)
}

/// A string of at most `max` characters.
fn text(max: usize, description: &str) -> ObjectBuilder {
    string()
        .max_length(Some(max))
        .description(Some(description))
}

/// A form field that is `true` or `false`.
fn boolean_text(description: &str) -> ObjectBuilder {
    string()
        .enum_values(Some(["true", "false"]))
        .description(Some(description))
}

/// A form field holding JSON text, or a comma-separated list.
fn json_text(description: &str) -> ObjectBuilder {
    string().description(Some(description))
}

/// A file part: binary both ways, OpenAPI 3.1's `contentMediaType` and 3.0's `format:
/// binary`, which generators still read.
fn binary() -> ObjectBuilder {
    string()
        .format(Some(SchemaFormat::KnownFormat(KnownFormat::Binary)))
        .content_media_type("application/octet-stream")
}

fn named(name: &str) -> RefOr<Schema> {
    RefOr::Ref(Ref::from_schema_name(name))
}

/// Declares unit types whose schema is the expression given, for the attributes to name
/// (`inline(...)` where the schema is a parameter's or a header's own).
macro_rules! schemas {
    ($($(#[$doc:meta])* $name:ident => $schema:expr;)+) => {$(
        $(#[$doc])*
        pub struct $name;

        impl PartialSchema for $name {
            fn schema() -> RefOr<Schema> {
                $schema.into()
            }
        }

        impl ToSchema for $name {}
    )+};
}

schemas! {
    /// An `Idempotency-Key`: 1 to 128 visible ASCII characters.
    IdempotencyKeyText => string().pattern(Some("^[!-~]{1,128}$"));
    /// `page` of a media list.
    PageNumber => integer().minimum(Some(1)).maximum(Some(1_000_000));
    /// `limit` of a media list.
    PageLimit => integer().minimum(Some(1)).maximum(Some(100));
    /// `status` of a media list: an overall status.
    StatusFilter => string().enum_values(Some(MediaStatus::ALL.map(MediaStatus::as_str)));
    /// A platform videos go to.
    VideoPlatform => string().enum_values(Some(Platform::ALL.map(Platform::as_str)));
    /// A platform images go to (YouTube takes videos only).
    ImagePlatform => string().enum_values(Some(Platform::ALL[1..].iter().map(|p| p.as_str())));
    /// `account` of a post deletion.
    AccountText => string().pattern(Some("^[!-~]{1,256}$"));
    /// A resumable upload's id.
    UploadIdText => string().pattern(Some("^upl_[0-9a-f]{32}$"));
    /// The tus protocol version spoken.
    TusVersion => string().enum_values(Some(["1.0.0"]));
    /// A byte count or offset in a tus header.
    Digits => string().pattern(Some("^[0-9]{1,19}$"));
    /// `Upload-Metadata`.
    UploadMetadataText => string().max_length(Some(4096));
    /// `Upload-Checksum`: `sha1` and a base64 SHA-1.
    Sha1Checksum => string().pattern(Some("^sha1 [A-Za-z0-9+/]{27}=$"));
    /// A whole number, as a response header gives it.
    Integer => integer();
    /// Bytes: a tus chunk.
    Chunk => string().format(Some(SchemaFormat::KnownFormat(KnownFormat::Binary)));
    /// The video upload form.
    VideoForm => form(true);
    /// The image upload form.
    ImageForm => form(false);
    /// The body of `PATCH /media/videos/{id}`.
    VideoPatch => change(&Platform::ALL);
    /// The body of `PATCH /media/images/{id}`.
    ImagePatch => change(&Platform::ALL[1..]);
}

/// What every upload form's request body says of itself.
pub const FORM_DESCRIPTION: &str = "A multipart form; nested platform settings win over flat ones. Each post (platform and account) is published by a background job at scheduledAt (drafts never); GET the item to follow each platform's status";

/// The upload form: its fields in the order the specification lists them.
///
/// One piece: the form's fields as one list, in the specification's order; split, the
/// video-only fields would lose their place.
fn form(video: bool) -> Schema {
    let millis = |description: &str| {
        string()
            .pattern(Some("^[0-9]{1,7}$"))
            .description(Some(format!(
                "{description}; within the video, at most {}",
                settings::COVER_MAX_MS
            )))
    };
    // A platform's nested settings: JSON text whose content the settings schema describes.
    let nested = |platform: Platform| {
        let mut content = settings::json_schema(platform, settings::SettingsSchema::Form);
        if !video {
            // A cover frame is a moment of a video: an image's form has none.
            if let Some(properties) = content["properties"].as_object_mut() {
                properties.remove("coverTimestampMs");
            }
        }
        string()
            .content_media_type("application/json")
            .extensions(keyword("contentSchema", content))
            .description(Some(format!(
                "JSON object of {}'s settings (see its schema); nested settings win over the flat fields",
                platform.label()
            )))
    };
    let file: RefOr<Schema> = if video {
        binary()
            .description(Some("The video: .mp4 or .mov (content checked)"))
            .into()
    } else {
        ArrayBuilder::new()
            .items(binary())
            .min_items(Some(1))
            .max_items(Some(CAROUSEL_MAX))
            .description(Some(format!("The image: .jpg, .png or .webp (content checked); or, as several `file` parts in order, a carousel of 2 to {CAROUSEL_MAX} images published as one post on each platform (Instagram 2 to 10, LinkedIn 2 to 20, Pinterest 2 to 5, TikTok up to 35)")))
            .into()
    };
    let platforms = if video {
        "JSON array of youtube, instagram, tiktok, linkedin, pinterest"
    } else {
        "JSON array of instagram, tiktok, linkedin, pinterest"
    };
    let mut fields: Vec<(&str, RefOr<Schema>)> = vec![
        ("file", file),
        (
            "fileId",
            string()
                .pattern(Some("^upl_[0-9a-f]{32}$"))
                .description(Some("A finished resumable upload to use instead of a file"))
                .into(),
        ),
        ("title", text(MAX_TITLE, "Internal title").into()),
        (
            "description",
            text(MAX_DESCRIPTION, "Internal description (default caption)").into(),
        ),
        ("platforms", json_text(platforms).into()),
        (
            "scheduledAt",
            string()
                .format(Some(SchemaFormat::KnownFormat(KnownFormat::DateTime)))
                .description(Some("When to publish"))
                .into(),
        ),
        ("isDraft", boolean_text("Save as a draft").into()),
        ("instagram", nested(Platform::Instagram).into()),
        ("tiktok", nested(Platform::Tiktok).into()),
        ("linkedin", nested(Platform::Linkedin).into()),
        ("pinterest", nested(Platform::Pinterest).into()),
        ("instagramCaption", text(2_200, "Instagram caption").into()),
        (
            "instagramAutoPublish",
            boolean_text("Publish automatically").into(),
        ),
        (
            "selectedInstagramAccounts",
            json_text("Instagram accountIds: a JSON array or comma-separated").into(),
        ),
        (
            "instagramFirstComment",
            text(
                2_200,
                "A comment posted under the post once it is published",
            )
            .into(),
        ),
        ("tiktokCaption", text(2_200, "TikTok caption").into()),
        (
            "tiktokPrivacy",
            string()
                .enum_values(Some([
                    "PUBLIC_TO_EVERYONE",
                    "MUTUAL_FOLLOW_FRIENDS",
                    "SELF_ONLY",
                ]))
                .into(),
        ),
        (
            "tiktokAutoPublish",
            boolean_text("Publish automatically").into(),
        ),
        (
            "selectedTiktokAccounts",
            json_text("TikTok accountIds: a JSON array or comma-separated").into(),
        ),
        (
            "tiktokDisableComment",
            boolean_text("Disable comments").into(),
        ),
        ("tiktokDisableDuet", boolean_text("Disable duets").into()),
        (
            "tiktokDisableStitch",
            boolean_text("Disable stitches").into(),
        ),
        ("linkedinComment", text(3_000, "LinkedIn post text").into()),
        (
            "linkedinAutoPublish",
            boolean_text("Publish automatically").into(),
        ),
        (
            "selectedLinkedinAccounts",
            json_text("LinkedIn accountIds (URNs): a JSON array or comma-separated").into(),
        ),
        (
            "linkedinFirstComment",
            text(
                1_250,
                "A comment posted under the post once it is published",
            )
            .into(),
        ),
        ("pinterestTitle", text(100, "Pin title").into()),
        ("pinterestDescription", text(500, "Pin description").into()),
        (
            "pinterestBoardId",
            text(
                64,
                "The board the pin goes on (required when pinterest is chosen)",
            )
            .into(),
        ),
        (
            "pinterestAutoPublish",
            boolean_text("Publish automatically").into(),
        ),
        (
            "selectedPinterestAccounts",
            json_text("Pinterest accountIds: a JSON array or comma-separated").into(),
        ),
    ];
    if video {
        fields.extend([
            ("youtube", nested(Platform::Youtube).into()),
            ("youtubeTitle", text(100, "YouTube title").into()),
            ("youtubeDescription", text(5_000, "YouTube description").into()),
            (
                "youtubePrivacy",
                string()
                    .enum_values(Some(["public", "private", "unlisted"]))
                    .into(),
            ),
            ("youtubeAutoPublish", boolean_text("Publish automatically").into()),
            (
                "selectedYoutubeChannels",
                json_text("YouTube channelIds: a JSON array or comma-separated").into(),
            ),
            (
                "youtubeFirstComment",
                text(10_000, "A comment posted under the video once it is published").into(),
            ),
            (
                "thumbnail",
                binary().description(Some("YouTube's custom thumbnail: a .jpg or .png of at most 2 MB (content checked), set once the video is published; needs youtube among the platforms")).into(),
            ),
            (
                "instagramCoverTimestampMs",
                millis("Instagram Reel cover: the frame this many milliseconds in").into(),
            ),
            (
                "tiktokCoverTimestampMs",
                millis("TikTok cover: the frame this many milliseconds in").into(),
            ),
            (
                "pinterestCoverTimestampMs",
                millis("Pinterest video pin cover: the frame at this many milliseconds (whole seconds are sent)").into(),
            ),
        ]);
    }
    let mut schema = ObjectBuilder::new().schema_type(Type::Object);
    for (name, field) in fields {
        schema = schema.property(name, field);
    }
    if video {
        schema = schema.required("platforms");
    }
    schema.into()
}

/// The body of a media item's change: the schedule, texts, and the settings of `platforms`.
fn change(platforms: &[Platform]) -> Schema {
    let nullable = |kind: Type| SchemaType::from_iter([kind, Type::Null]);
    let text = |max: usize, description: &str| {
        ObjectBuilder::new()
            .schema_type(nullable(Type::String))
            .max_length(Some(max))
            .description(Some(description))
    };
    let mut schema = ObjectBuilder::new()
        .schema_type(Type::Object)
        .min_properties(Some(1))
        .additional_properties(Some(AdditionalProperties::<Schema>::FreeForm(false)))
        .property(
            "scheduledAt",
            ObjectBuilder::new()
                .schema_type(nullable(Type::String))
                .format(Some(SchemaFormat::KnownFormat(KnownFormat::DateTime)))
                .description(Some("When to publish; null for as soon as possible")),
        )
        .property("title", text(MAX_TITLE, "Internal title; null clears it"))
        .property(
            "description",
            text(
                MAX_DESCRIPTION,
                "Internal description (default caption); null clears it",
            ),
        );
    for platform in platforms {
        // The stored settings' component: what the item shows is what a change sends.
        let mut reference = Ref::from_schema_name(settings::schema_name(*platform));
        reference.description = format!("{}'s settings to change, merged into the stored ones (a key set to null is removed); its accounts and autoPublish stay as uploaded", platform.label());
        schema = schema.property(platform.as_str(), reference);
    }
    schema.into()
}

/// Declares the media API's success envelopes, each a component schema named
/// `MediaEnvelope_<name>` (so generated clients get one model per shape): `{success: true,
/// data, meta}`, with a `message` where the answer has one.
macro_rules! envelopes {
    ($($(#[$doc:meta])* $type:ident, $name:literal, message: $message:literal => $data:expr;)+) => {$(
        $(#[$doc])*
        pub struct $type;

        impl PartialSchema for $type {
            fn schema() -> RefOr<Schema> {
                envelope($data, $message).into()
            }
        }

        impl ToSchema for $type {
            fn name() -> Cow<'static, str> {
                Cow::Borrowed(concat!("MediaEnvelope_", $name))
            }
        }
    )+};
}

envelopes! {
    /// The items an upload made (a video goes to one item; an image form too).
    UploadedEnvelope, "Uploaded", message: true =>
        ArrayBuilder::new().items(named("UploadedItem")).into();
    /// A page of videos.
    VideoListEnvelope, "VideoList", message: false => list("videos");
    /// A page of images.
    ImageListEnvelope, "ImageList", message: false => list("images");
    /// One item.
    ItemEnvelope, "MediaItem", message: false => named("MediaItemView");
    /// One item, with what was done to it.
    ItemWithMessageEnvelope, "MediaItemWithMessage", message: true => named("MediaItemView");
    /// A deleted item.
    DeletedEnvelope, "DeletedMedia", message: true => named("DeletedMedia");
    /// This month's media meters.
    UsageEnvelope, "MediaUsage", message: false => named("MediaUsage");
    /// The connected channels.
    ChannelsEnvelope, "Channels", message: false => named("ChannelsView");
}

/// A media list's `data`: the items under `key`, and the pagination.
fn list(key: &str) -> RefOr<Schema> {
    ObjectBuilder::new()
        .schema_type(Type::Object)
        .required(key)
        .required("pagination")
        .property(key, ArrayBuilder::new().items(named("MediaItemView")))
        .property("pagination", named("Pagination"))
        .into()
}

fn envelope(data: RefOr<Schema>, message: bool) -> Schema {
    let mut schema = ObjectBuilder::new()
        .schema_type(Type::Object)
        .required("success")
        .required("data")
        .required("meta")
        .property(
            "success",
            ObjectBuilder::new()
                .schema_type(Type::Boolean)
                .extensions(keyword("const", Value::Bool(true))),
        )
        .property("data", data)
        .property("meta", named("Meta"));
    if message {
        schema = schema.required("message").property("message", string());
    }
    schema.into()
}
