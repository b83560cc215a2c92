//! The media API's operations in the OpenAPI document. Its routes are plain axum routes (a
//! multipart form and the tus protocol's headers and bodies do not fit the derive macros), so
//! their operations are written out here, next to the shared decoration in
//! [`crate::openapi`]; `tests/tests/e2e/openapi.rs` checks that every route is documented and
//! every documented operation is routed.

use serde_json::{json, Map, Value};
use xf_core::media::rules::CAROUSEL_MAX;
use xf_core::media::settings::{self, MAX_DESCRIPTION, MAX_TITLE};
use xf_core::media::{MediaStatus, Platform};

/// A `$ref` to a component schema.
fn schema(name: &str) -> Value {
    json!({"$ref": format!("#/components/schemas/{name}")})
}

/// The media API's success envelopes, each a named component schema
/// (`MediaEnvelope_<name>`), so generated clients get one model per shape.
#[derive(Debug, Clone, Copy)]
enum Envelope {
    Uploaded,
    VideoList,
    ImageList,
    Item,
    ItemWithMessage,
    Deleted,
    Usage,
    Channels,
}

impl Envelope {
    const ALL: [Envelope; 8] = [
        Envelope::Uploaded,
        Envelope::VideoList,
        Envelope::ImageList,
        Envelope::Item,
        Envelope::ItemWithMessage,
        Envelope::Deleted,
        Envelope::Usage,
        Envelope::Channels,
    ];

    fn name(self) -> String {
        let name = match self {
            Envelope::Uploaded => "Uploaded",
            Envelope::VideoList => "VideoList",
            Envelope::ImageList => "ImageList",
            Envelope::Item => "MediaItem",
            Envelope::ItemWithMessage => "MediaItemWithMessage",
            Envelope::Deleted => "DeletedMedia",
            Envelope::Usage => "MediaUsage",
            Envelope::Channels => "Channels",
        };
        format!("MediaEnvelope_{name}")
    }

    /// Its `data`, and whether it has a `message`.
    fn data(self) -> (Value, bool) {
        let list = |key: &str| {
            json!({
                "type": "object",
                "required": [key, "pagination"],
                "properties": {key: {"type": "array", "items": schema("MediaItemView")}, "pagination": schema("Pagination")}
            })
        };
        match self {
            Envelope::Uploaded => (
                json!({"type": "array", "items": schema("UploadedItem")}),
                true,
            ),
            Envelope::VideoList => (list("videos"), false),
            Envelope::ImageList => (list("images"), false),
            Envelope::Item => (schema("MediaItemView"), false),
            Envelope::ItemWithMessage => (schema("MediaItemView"), true),
            Envelope::Deleted => (schema("DeletedMedia"), true),
            Envelope::Usage => (schema("MediaUsage"), false),
            Envelope::Channels => (schema("ChannelsView"), false),
        }
    }

    fn schema(self) -> Value {
        let (data, message) = self.data();
        let mut properties = json!({
            "success": {"type": "boolean", "const": true},
            "data": data,
            "meta": schema("Meta"),
        });
        let mut required = vec!["success", "data", "meta"];
        if message {
            properties["message"] = json!({"type": "string"});
            required.push("message");
        }
        json!({"type": "object", "required": required, "properties": properties})
    }
}

/// Every media success envelope, as component schemas by name.
pub fn envelopes() -> Map<String, Value> {
    Envelope::ALL
        .into_iter()
        .map(|envelope| (envelope.name(), envelope.schema()))
        .collect()
}

/// A media success response in `envelope`.
fn success(description: &str, envelope: Envelope) -> Value {
    json!({
        "description": description,
        "content": {"application/json": {"schema": schema(&envelope.name())}}
    })
}

/// An error status of a handler (the envelope is added by the decoration).
fn error(description: &str) -> Value {
    json!({"description": description})
}

/// A header parameter.
fn header(name: &str, required: bool, description: &str, schema: Value) -> Value {
    json!({"name": name, "in": "header", "required": required, "description": description, "schema": schema})
}

fn tus_resumable() -> Value {
    header(
        "Tus-Resumable",
        true,
        "The protocol version: 1.0.0 (else 412 with Tus-Version)",
        json!({"type": "string", "enum": ["1.0.0"]}),
    )
}

/// A response header.
fn response_header(description: &str, schema: Value) -> Value {
    json!({"description": description, "schema": schema})
}

/// A tus response without a body, with the upload's headers.
fn tus_answer(description: &str, location: bool) -> Value {
    let mut headers = json!({
        "Tus-Resumable": response_header("1.0.0", json!({"type": "string"})),
        "Upload-Offset": response_header("Bytes received so far", json!({"type": "integer"})),
        "Upload-Expires": response_header("When the upload is purged if unused (HTTP date)", json!({"type": "string"})),
    });
    if location {
        headers["Location"] = response_header(
            "The upload's address; its last segment is the fileId of the upload forms",
            json!({"type": "string"}),
        );
    }
    json!({"description": description, "headers": headers})
}

/// The upload form of `kind` (`video` or `image`).
///
/// One piece: the upload form's fields as one schema literal, in the order the specification
/// lists them.
fn form(video: bool) -> Value {
    let text = |max: usize, description: &str| json!({"type": "string", "maxLength": max, "description": description});
    let boolean = |description: &str| json!({"type": "string", "enum": ["true", "false"], "description": description});
    let json_text = |description: &str| json!({"type": "string", "description": description});
    let millis = |description: &str| json!({"type": "string", "pattern": "^[0-9]{1,7}$", "description": format!("{description}; within the video, at most {}", settings::COVER_MAX_MS)});
    // A platform's nested settings: JSON text whose content the settings schema describes.
    let settings = |platform: Platform| {
        let mut nested = settings::json_schema(platform, settings::SettingsSchema::Form);
        if !video {
            // A cover frame is a moment of a video: an image's form has none.
            if let Some(properties) = nested["properties"].as_object_mut() {
                properties.remove("coverTimestampMs");
            }
        }
        json!({
            "type": "string",
            "contentMediaType": "application/json",
            "contentSchema": nested,
            "description": format!("JSON object of {}'s settings (see its schema); nested settings win over the flat fields", platform.label()),
        })
    };
    let mut properties = json!({
        // Binary both ways: OpenAPI 3.1's `contentMediaType` and 3.0's `format: binary`, which
        // generators still read.
        "file": if video {
            json!({"type": "string", "format": "binary", "contentMediaType": "application/octet-stream", "description": "The video: .mp4 or .mov (content checked)"})
        } else {
            json!({
                "type": "array",
                "items": {"type": "string", "format": "binary", "contentMediaType": "application/octet-stream"},
                "minItems": 1,
                "maxItems": CAROUSEL_MAX,
                "description": format!("The image: .jpg, .png or .webp (content checked); or, as several `file` parts in order, a carousel of 2 to {CAROUSEL_MAX} images published as one post on each platform (Instagram 2 to 10, LinkedIn 2 to 20, Pinterest 2 to 5, TikTok up to 35)"),
            })
        },
        "fileId": {"type": "string", "pattern": "^upl_[0-9a-f]{32}$", "description": "A finished resumable upload to use instead of a file"},
        "title": text(MAX_TITLE, "Internal title"),
        "description": text(MAX_DESCRIPTION, "Internal description (default caption)"),
        "platforms": json_text(if video { "JSON array of youtube, instagram, tiktok, linkedin, pinterest" } else { "JSON array of instagram, tiktok, linkedin, pinterest" }),
        "scheduledAt": {"type": "string", "format": "date-time", "description": "When to publish"},
        "isDraft": boolean("Save as a draft"),
        "instagram": settings(Platform::Instagram),
        "tiktok": settings(Platform::Tiktok),
        "linkedin": settings(Platform::Linkedin),
        "pinterest": settings(Platform::Pinterest),
        "instagramCaption": text(2_200, "Instagram caption"),
        "instagramAutoPublish": boolean("Publish automatically"),
        "selectedInstagramAccounts": json_text("Instagram accountIds: a JSON array or comma-separated"),
        "instagramFirstComment": text(2_200, "A comment posted under the post once it is published"),
        "tiktokCaption": text(2_200, "TikTok caption"),
        "tiktokPrivacy": {"type": "string", "enum": ["PUBLIC_TO_EVERYONE", "MUTUAL_FOLLOW_FRIENDS", "SELF_ONLY"]},
        "tiktokAutoPublish": boolean("Publish automatically"),
        "selectedTiktokAccounts": json_text("TikTok accountIds: a JSON array or comma-separated"),
        "tiktokDisableComment": boolean("Disable comments"),
        "tiktokDisableDuet": boolean("Disable duets"),
        "tiktokDisableStitch": boolean("Disable stitches"),
        "linkedinComment": text(3_000, "LinkedIn post text"),
        "linkedinAutoPublish": boolean("Publish automatically"),
        "selectedLinkedinAccounts": json_text("LinkedIn accountIds (URNs): a JSON array or comma-separated"),
        "linkedinFirstComment": text(1_250, "A comment posted under the post once it is published"),
        "pinterestTitle": text(100, "Pin title"),
        "pinterestDescription": text(500, "Pin description"),
        "pinterestBoardId": text(64, "The board the pin goes on (required when pinterest is chosen)"),
        "pinterestAutoPublish": boolean("Publish automatically"),
        "selectedPinterestAccounts": json_text("Pinterest accountIds: a JSON array or comma-separated"),
    });
    if video {
        let extra = json!({
            "youtube": settings(Platform::Youtube),
            "youtubeTitle": text(100, "YouTube title"),
            "youtubeDescription": text(5_000, "YouTube description"),
            "youtubePrivacy": {"type": "string", "enum": ["public", "private", "unlisted"]},
            "youtubeAutoPublish": boolean("Publish automatically"),
            "selectedYoutubeChannels": json_text("YouTube channelIds: a JSON array or comma-separated"),
            "youtubeFirstComment": text(10_000, "A comment posted under the video once it is published"),
            "thumbnail": {"type": "string", "format": "binary", "contentMediaType": "application/octet-stream", "description": "YouTube's custom thumbnail: a .jpg or .png of at most 2 MB (content checked), set once the video is published; needs youtube among the platforms"},
            "instagramCoverTimestampMs": millis("Instagram Reel cover: the frame this many milliseconds in"),
            "tiktokCoverTimestampMs": millis("TikTok cover: the frame this many milliseconds in"),
            "pinterestCoverTimestampMs": millis("Pinterest video pin cover: the frame at this many milliseconds (whole seconds are sent)"),
        });
        if let (Some(properties), Value::Object(extra)) = (properties.as_object_mut(), extra) {
            properties.extend(extra);
        }
    }
    let mut schema = json!({"type": "object", "properties": properties});
    if video {
        schema["required"] = json!(["platforms"]);
    }
    json!({
        "required": true,
        "description": "A multipart form; nested platform settings win over flat ones. Each post (platform and account) is published by a background job at scheduledAt (drafts never); GET the item to follow each platform's status",
        "content": {"multipart/form-data": {
            "schema": schema,
            "encoding": if video {
                json!({"file": {"contentType": "video/mp4, video/quicktime"}, "thumbnail": {"contentType": "image/jpeg, image/png"}})
            } else {
                json!({"file": {"contentType": "image/jpeg, image/png, image/webp"}})
            }
        }}
    })
}

fn upload(operation_id: &str, video: bool, summary: &str) -> Value {
    json!({
        "operationId": operation_id,
        "tags": ["media"],
        "summary": summary,
        "parameters": [header(
            "Idempotency-Key",
            false,
            "Retained 24 hours. The same key with the same form (fields and file bytes) replays the first response with Idempotent-Replayed: true; with another form it is a 422",
            json!({"type": "string", "pattern": "^[!-~]{1,128}$"}),
        )],
        "requestBody": form(video),
        "responses": {
            "201": success("Stored", Envelope::Uploaded),
            "400": error("`validation_error`: a field, the file's extension or content, the platforms, settings or accounts, or a chosen platform's rule (durations, sizes, formats, aspect ratios, text lengths), each detail naming the platform or its setting"),
            "413": error("`payload_too_large`: over the size limit"),
            "429": error("`rate_limit`, or `too_many_uploads`: the organization has as many uploads in progress as an instance takes at once"),
        }
    })
}

fn list(operation_id: &str, envelope: Envelope, platforms: &[&str]) -> Value {
    let query = |name: &str, schema: Value, description: &str| json!({"name": name, "in": "query", "required": false, "description": description, "schema": schema});
    json!({
        "operationId": operation_id,
        "tags": ["media"],
        "summary": "Items newest first, a page at a time",
        "parameters": [
            query("page", json!({"type": "integer", "minimum": 1, "maximum": 1_000_000}), "Page, from 1 (default 1)"),
            query("limit", json!({"type": "integer", "minimum": 1, "maximum": 100}), "Items per page, 1 to 100 (default 10)"),
            query("status", json!({"type": "string", "enum": MediaStatus::ALL.map(MediaStatus::as_str)}), "Only items with this overall status"),
            query("platform", json!({"type": "string", "enum": platforms}), "Only items that target this platform"),
        ],
        "responses": {
            "200": success("A page", envelope),
        }
    })
}

fn detail(operation_id: &str) -> Value {
    json!({
        "operationId": operation_id,
        "tags": ["media"],
        "summary": "One item with its file and per-platform state",
        "parameters": [{"name": "id", "in": "path", "required": true, "schema": schema("MediaId")}],
        "responses": {
            "200": success("The item", Envelope::Item),
            "404": error("`not_found`: no such item of this kind in the organization"),
        }
    })
}

fn update(operation_id: &str, platforms: &[Platform]) -> Value {
    let text = |max: usize, description: &str| json!({"type": ["string", "null"], "maxLength": max, "description": description});
    let mut properties = json!({
        "scheduledAt": {"type": ["string", "null"], "format": "date-time", "description": "When to publish; null for as soon as possible"},
        "title": text(MAX_TITLE, "Internal title; null clears it"),
        "description": text(MAX_DESCRIPTION, "Internal description (default caption); null clears it"),
    });
    for platform in platforms {
        // The stored settings' component: what the item shows is what a change sends.
        let mut reference = schema(&format!("{}Settings", capitalized(platform.as_str())));
        reference["description"] = json!(format!("{}'s settings to change, merged into the stored ones (a key set to null is removed); its accounts and autoPublish stay as uploaded", platform.label()));
        properties[platform.as_str()] = reference;
    }
    json!({
        "operationId": operation_id,
        "tags": ["media"],
        "summary": "Change the schedule, texts or settings before any post starts",
        "description": "Checked as an upload of the changed item would be, platform rules included; the posts' jobs move to the new scheduledAt. The platforms stay as uploaded.",
        "parameters": [{"name": "id", "in": "path", "required": true, "schema": schema("MediaId")}],
        "requestBody": {"required": true, "content": {"application/json": {"schema": {
            "type": "object", "minProperties": 1, "additionalProperties": false, "properties": properties
        }}}},
        "responses": {
            "200": success("The item as changed", Envelope::Item),
            "400": error("`validation_error`: a field, a setting, or a platform's rule, each detail naming its field"),
            "404": error("`not_found`: no such item of this kind in the organization"),
            "409": error("`conflict`: a post already started (the message names its platform); cancel it instead"),
        }
    })
}

/// `youtube` → `Youtube`.
fn capitalized(name: &str) -> String {
    let mut chars = name.chars();
    chars
        .next()
        .map(|first| first.to_ascii_uppercase().to_string() + chars.as_str())
        .unwrap_or_default()
}

fn delete(operation_id: &str) -> Value {
    json!({
        "operationId": operation_id,
        "tags": ["media"],
        "summary": "Delete an item and its file",
        "description": "Posts not yet published are stopped (a running upload too); posts already published stay on their platforms. The file is deleted from the blob store.",
        "parameters": [{"name": "id", "in": "path", "required": true, "schema": schema("MediaId")}],
        "responses": {
            "200": success("Deleted", Envelope::Deleted),
            "404": error("`not_found`: no such item of this kind in the organization"),
            "409": error("`conflict`: a post is being created on its platform right now (the message names it); delete once it has settled"),
        }
    })
}

fn delete_posts(operation_id: &str, platforms: &[&str]) -> Value {
    json!({
        "operationId": operation_id,
        "tags": ["media"],
        "summary": "Delete the item's published posts from a platform",
        "description": "All or none: each published post on the platform (only the `account`'s, when given) becomes `deleting`, and a job deletes it through the platform's API (YouTube `videos.delete`, LinkedIn post deletion, Pinterest pin deletion); then it is `deleted` and `media.post.deleted` is sent. A deletion the platform refuses leaves the post `published`, with why in its `error`. Posts already being deleted, or deleted, are left as they are, so a repeat starts nothing. Instagram and TikTok have no API to delete a post.",
        "parameters": [
            {"name": "id", "in": "path", "required": true, "schema": schema("MediaId")},
            {"name": "platform", "in": "path", "required": true, "schema": {"type": "string", "enum": platforms}},
            {"name": "account", "in": "query", "required": false, "description": "Only the post to this account (`channelId` for YouTube, `accountId` elsewhere); by default every post on the platform", "schema": {"type": "string", "pattern": "^[!-~]{1,256}$"}},
        ],
        "responses": {
            "202": success("The item, its posts on the platform `deleting` (or already `deleted`)", Envelope::ItemWithMessage),
            "400": error("`validation_error`: the `account` parameter"),
            "404": error("`not_found`: no such item of this kind in the organization, or it has no post on that platform (or account)"),
            "409": error("`conflict`: the platform's API cannot delete a post (Instagram, TikTok: the message names the rule), or a post there is not published (the message names it; one still to come can be cancelled)"),
        }
    })
}

fn cancel(operation_id: &str) -> Value {
    json!({
        "operationId": operation_id,
        "tags": ["media"],
        "summary": "Cancel every post not yet sent to its platform",
        "description": "All or none: each post whose irreversible call was not made yet becomes `cancelled` (a running upload is stopped, and nothing of it is published); the item is `cancelled` when every post is. Posts already published keep their status.",
        "parameters": [
            {"name": "id", "in": "path", "required": true, "schema": schema("MediaId")},
            header(
                "Idempotency-Key",
                false,
                "Retained 24 hours. A repeat with the same key replays the first response with Idempotent-Replayed: true",
                json!({"type": "string", "pattern": "^[!-~]{1,128}$"}),
            ),
        ],
        "responses": {
            "200": success("The item after the cancel", Envelope::ItemWithMessage),
            "404": error("`not_found`: no such item of this kind in the organization"),
            "409": error("`conflict`: nothing was cancelled, as a post was already sent to its platform (the message names it) or every post is already final"),
        }
    })
}

fn options() -> Value {
    json!({
        "operationId": "tus_options",
        "tags": ["media"],
        "summary": "What the server supports (no key needed)",
        "responses": {"204": {
            "description": "Tus-Version, Tus-Extension, Tus-Max-Size and Tus-Checksum-Algorithm",
            "headers": {
                "Tus-Resumable": response_header("1.0.0", json!({"type": "string"})),
                "Tus-Version": response_header("1.0.0", json!({"type": "string"})),
                "Tus-Extension": response_header("creation,creation-with-upload,expiration,termination,checksum", json!({"type": "string"})),
                "Tus-Max-Size": response_header("The largest upload, in bytes", json!({"type": "integer"})),
                "Tus-Checksum-Algorithm": response_header("sha1", json!({"type": "string"})),
            }
        }}
    })
}

fn upload_id() -> Value {
    json!({"name": "uploadId", "in": "path", "required": true, "schema": {"type": "string", "pattern": "^upl_[0-9a-f]{32}$"}})
}

/// The media API's path items, relative to the mount point.
///
/// One piece: the media API's paths as one document literal, in the order the specification
/// lists them.
pub fn paths() -> Map<String, Value> {
    let video_platforms = ["youtube", "instagram", "tiktok", "linkedin", "pinterest"];
    let image_platforms = ["instagram", "tiktok", "linkedin", "pinterest"];
    let checksum = header(
        "Upload-Checksum",
        false,
        "sha1 and the base64 of the chunk's SHA-1 (460 when it does not match)",
        json!({"type": "string", "pattern": "^sha1 [A-Za-z0-9+/]{27}=$"}),
    );
    let chunk = json!({
        "required": true,
        "content": {"application/offset+octet-stream": {"schema": {"type": "string", "format": "binary"}}}
    });
    let items = json!({
        "/media/videos": {
            "post": upload("upload_video", true, "Upload a video (multipart form)"),
            "get": list("list_videos", Envelope::VideoList, &video_platforms),
        },
        "/media/images": {
            "post": upload("upload_image", false, "Upload an image (multipart form)"),
            "get": list("list_images", Envelope::ImageList, &image_platforms),
        },
        "/media/videos/{id}": {"get": detail("get_video"), "patch": update("update_video", &Platform::ALL), "delete": delete("delete_video")},
        "/media/images/{id}": {"get": detail("get_image"), "patch": update("update_image", &Platform::ALL[1..]), "delete": delete("delete_image")},
        "/media/videos/{id}/cancel": {"post": cancel("cancel_video")},
        "/media/images/{id}/cancel": {"post": cancel("cancel_image")},
        "/media/videos/{id}/posts/{platform}": {"delete": delete_posts("delete_video_posts", &video_platforms)},
        "/media/images/{id}/posts/{platform}": {"delete": delete_posts("delete_image_posts", &image_platforms)},
        "/video/upload": {"post": upload("upload_video_legacy", true, "Upload a video (the older path; same form)")},
        "/media/usage": {"get": {
            "operationId": "media_usage",
            "tags": ["media"],
            "summary": "This month's media meters",
            "description": "This UTC month's uploads (a carousel counts once), the bytes of their files, posts published and posts deleted from their platforms, counted as they happen (a deleted item's upload still counts)",
            "responses": {"200": success("The meters", Envelope::Usage)}
        }},
        "/channels": {"get": {
            "operationId": "list_channels",
            "tags": ["media"],
            "summary": "Connected accounts by platform",
            "responses": {"200": success("The channels", Envelope::Channels)}
        }},
        "/media/uploads": {
            "options": options(),
            "post": {
                "operationId": "tus_create",
                "tags": ["media"],
                "summary": "Create a resumable upload (tus creation, creation-with-upload)",
                "parameters": [
                    tus_resumable(),
                    header("Upload-Length", true, "The upload's size in bytes", json!({"type": "string", "pattern": "^[0-9]{1,19}$"})),
                    header("Upload-Metadata", false, "Comma-separated `key base64value` pairs; `filename` names the file", json!({"type": "string", "maxLength": 4096})),
                    checksum.clone(),
                ],
                "requestBody": {"required": false, "content": {"application/offset+octet-stream": {"schema": {"type": "string", "format": "binary"}}}},
                "responses": {
                    "201": tus_answer("Created", true),
                    "400": error("`validation_error`: a header"),
                    "412": error("`tus_version_unsupported`"),
                    "413": error("`payload_too_large`: Upload-Length over the limit"),
                    "429": error("`rate_limit`, or `too_many_uploads`: the organization has as many uploads in progress as an instance takes at once"),
                    "460": error("`checksum_mismatch`: the first chunk was dropped"),
                }
            }
        },
        "/media/uploads/{uploadId}": {
            "head": {
                "operationId": "tus_status",
                "tags": ["media"],
                "summary": "The upload's offset (where to resume)",
                "parameters": [upload_id(), tus_resumable()],
                "responses": {
                    "200": tus_answer("The upload, with Upload-Length and Upload-Metadata", false),
                    "404": error("`not_found`: no such upload, or it expired"),
                    "412": error("`tus_version_unsupported`"),
                }
            },
            "patch": {
                "operationId": "tus_append",
                "tags": ["media"],
                "summary": "Append a chunk at Upload-Offset",
                "parameters": [
                    upload_id(),
                    tus_resumable(),
                    header("Upload-Offset", true, "The upload's offset", json!({"type": "string", "pattern": "^[0-9]{1,19}$"})),
                    checksum,
                ],
                "requestBody": chunk,
                "responses": {
                    "204": tus_answer("Appended", false),
                    "404": error("`not_found`: no such upload, or it expired"),
                    "409": error("`upload_offset_mismatch`: resume from the offset HEAD gives"),
                    "412": error("`tus_version_unsupported`"),
                    "413": error("`payload_too_large`: more bytes than Upload-Length"),
                    "429": error("`rate_limit`, or `too_many_uploads`: the organization has as many uploads in progress as an instance takes at once"),
                    "415": error("`unsupported_media_type`: chunks are application/offset+octet-stream"),
                    "460": error("`checksum_mismatch`: the chunk was dropped"),
                }
            },
            "delete": {
                "operationId": "tus_terminate",
                "tags": ["media"],
                "summary": "Drop the upload (tus termination)",
                "parameters": [upload_id(), tus_resumable()],
                "responses": {
                    "204": {"description": "Dropped", "headers": {"Tus-Resumable": response_header("1.0.0", json!({"type": "string"}))}},
                    "404": error("`not_found`: no such upload, or it expired"),
                    "412": error("`tus_version_unsupported`"),
                }
            }
        },
    });
    match items {
        Value::Object(items) => items,
        _ => Map::new(),
    }
}
