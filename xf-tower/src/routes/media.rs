//! The media publishing API: uploads (multipart, streamed to the blob store), media items and
//! lists, and connected channels. Its envelopes are the media spec's: `{success: true, data}`
//! and `{success: false, error: {code, message, details?}}`, each with `meta.requestId`.
//! Keys come as `X-API-Key` or `Authorization: Bearer`; the plan needs `mediaApi`.

use axum::extract::{Request, State};
use axum::response::{IntoResponse, Response};
use axum::routing::any;
use axum::Router;
use http::StatusCode;
use serde_json::json;
use utoipa_axum::routes;
use xf_core::ids::MediaId;
use xf_core::media::api::{MediaListQuery, PostDeleteQuery};
use xf_core::media::{MediaKind, Platform};
use xf_core::plans::Entitlement;
use xf_core::{Error, Xf};

use super::upload_form::UploadForm;
use super::Routes;
use crate::envelope::{self, Answer, Api};
use crate::error::Failure;
use crate::extract::{api_key, FromSegment, PathParam, PathParams, Query, Sent, Write};
use crate::idempotency;
use crate::openapi_media::{
    AccountText, ChannelsEnvelope, DeletedEnvelope, IdempotencyKeyText, ImageForm,
    ImageListEnvelope, ImagePatch, ImagePlatform, ItemEnvelope, ItemWithMessageEnvelope, PageLimit,
    PageNumber, StatusFilter, UploadedEnvelope, UsageEnvelope, VideoForm, VideoListEnvelope,
    VideoPatch, VideoPlatform, FORM_DESCRIPTION,
};

/// The media API at `prefix` (`""` for none) and its operations for the OpenAPI document:
/// its routes (each handler authenticating and counting its request with [`MediaCaller`]),
/// and its own answers to a method a route does not take (`405`) and to unknown paths below
/// `/media/` and `/channels/` (`404`), all in its envelope. A service that merges it keeps its
/// own fallback for every other path.
pub fn router(prefix: &'static str) -> (Router<Xf>, utoipa::openapi::OpenApi) {
    let routes = Routes::new(prefix, Default::default())
        .routes(routes!(upload_video, list_videos))
        .routes(routes!(upload_image, list_images))
        .routes(routes!(get_video, update_video, delete_video))
        .routes(routes!(get_image, update_image, delete_image))
        .routes(routes!(cancel_video))
        .routes(routes!(cancel_image))
        .routes(routes!(delete_video_posts))
        .routes(routes!(delete_image_posts))
        .routes(routes!(upload_video_legacy))
        .routes(routes!(media_usage))
        .routes(routes!(list_channels));
    super::uploads::router(routes)
        .map(|router| {
            // Uploads are streamed to the blob store under the media limits, not axum's 2 MB.
            router
                .layer(axum::extract::DefaultBodyLimit::disable())
                .method_not_allowed_fallback(method_not_allowed)
        })
        .route("/media", any(not_found))
        .route("/media/{*rest}", any(not_found))
        .route("/channels/{*rest}", any(not_found))
        .split()
}

/// The operations' answers to an item that is not there, to more uploads than an instance
/// takes, and to a refused form.
const NO_ITEM: &str = "`not_found`: no such item of this kind in the organization";
pub(super) const TOO_MANY_UPLOADS: &str = "`rate_limit`, or `too_many_uploads`: the organization has as many uploads in progress as an instance takes at once";
const UPLOAD_IDEMPOTENCY: &str = "Retained 24 hours. The same key with the same form (fields and file bytes) replays the first response with Idempotent-Replayed: true; with another form it is a 422";
const UPLOAD_REFUSED: &str = "`validation_error`: a field, the file's extension or content, the platforms, settings or accounts, or a chosen platform's rule (durations, sizes, formats, aspect ratios, text lengths), each detail naming the platform or its setting";

/// `405` in the media envelope (axum adds `Allow`).
async fn method_not_allowed() -> Response {
    MediaError::from(crate::error::Refusal::MethodNotAllowed).into_response()
}

/// `404` in the media envelope, for paths below the media API's that name nothing.
async fn not_found() -> Response {
    MediaError::from(Error::NotFound("route")).into_response()
}

/// A failure in the media envelope.
pub struct MediaError(pub Failure);

impl<E: Into<Failure>> From<E> for MediaError {
    fn from(error: E) -> Self {
        MediaError(error.into())
    }
}

impl IntoResponse for MediaError {
    fn into_response(self) -> Response {
        crate::error::respond_failure(Api::Media, &self.0)
    }
}

type Handled = Result<Response, MediaError>;

crate::extract::authed!(
    /// The media API's caller: the key of `X-API-Key` or `Authorization: Bearer`, whose plan
    /// includes the media API, counted against its rate limits
    /// ([`admit`](crate::middleware::admit)), as the developer API's `Authed` is. Every
    /// handler of the media API takes it as its first argument after the state; tus's
    /// `OPTIONS`, which clients send without credentials, does not.
    MediaCaller,
    api_key,
    Entitlement::MediaApi,
    MediaError
);

/// A path parameter of a media route (see [`PathParam`]), refused in the media envelope.
pub struct MediaPath<T>(pub T);

impl<S: Send + Sync, T: FromSegment> axum::extract::FromRequestParts<S> for MediaPath<T> {
    type Rejection = MediaError;

    async fn from_request_parts(
        parts: &mut http::request::Parts,
        state: &S,
    ) -> Result<Self, Self::Rejection> {
        PathParam::read(parts, state)
            .await
            .map(|PathParam(value)| MediaPath(value))
            .map_err(MediaError::from)
    }
}

/// `POST /media/videos`, `/media/images`, `/video/upload`: the form is read (its file
/// streamed to the blob store, owned by the form until an item keeps it), then the item is
/// created, once per `Idempotency-Key`. After a replay or a refusal the new copy of the file
/// is deleted before the answer goes out; a client that goes away drops the form, whose file
/// then deletes itself.
async fn upload(xf: Xf, caller: xf_core::Caller, kind: MediaKind, request: Request) -> Handled {
    let form = UploadForm::read(&xf, &caller, kind, request).await?;
    let (key, fingerprint) = (form.idempotency_key.clone(), form.fingerprint());
    let message = match kind {
        MediaKind::Video => "video uploaded",
        MediaKind::Image => "image uploaded",
    };
    let UploadForm {
        fields,
        mut files,
        mut thumbnail,
        ..
    } = form;
    // The write borrows what it needs, and takes the files only if it runs.
    let (staged, staged_thumbnail) = (&mut files, &mut thumbnail);
    let (xf_ref, caller_ref, fields) = (&xf, &caller, &fields);
    let create = move || async move {
        // A refused form leaves its files to the clean-up below.
        let fields = xf_core::media::settings::parse_upload_fields(kind, fields)?;
        let items = xf_ref
            .media()
            .create(
                caller_ref,
                kind,
                &fields,
                std::mem::take(staged),
                staged_thumbnail.take(),
            )
            .await?;
        let answer = Answer::of(&items).map_err(Error::internal)?;
        Ok(answer.with_message(message))
    };
    let response = idempotency::once(
        &xf,
        &caller,
        key.as_ref(),
        &fingerprint,
        Api::Media,
        StatusCode::CREATED,
        create,
    )
    .await;
    // A replay or a refusal before the item was made leaves the files unused: they are
    // deleted before the answer goes out.
    xf.media().discard_staged(files).await;
    xf.media().discard_staged(thumbnail).await;
    Ok(response)
}

/// `PATCH /media/{videos|images}/{id}` with a JSON object of the fields to change: the item
/// as it is after the change.
async fn update(
    xf: Xf,
    caller: xf_core::Caller,
    kind: MediaKind,
    id: MediaId,
    sent: Result<Sent, crate::error::ApiError>,
) -> Handled {
    let sent = sent.map_err(|e| MediaError(e.0))?;
    let patch = xf_core::media::settings::MediaPatch::from_json(&sent.strict_json()?)?;
    let item = xf.media().update(&caller, kind, &id, &patch).await?;
    Ok(envelope::media_data(StatusCode::OK, &item))
}

/// `DELETE /media/{videos|images}/{id}`: `{id, deleted: true, cancelledPosts}`.
async fn delete(xf: Xf, caller: xf_core::Caller, kind: MediaKind, id: MediaId) -> Handled {
    let deleted = xf.media().delete(&caller, kind, &id).await?;
    let message = match kind {
        MediaKind::Video => "video deleted",
        MediaKind::Image => "image deleted",
    };
    let answer = Answer::of(&deleted).map_err(Error::internal)?;
    Ok(envelope::answer(
        Api::Media,
        StatusCode::OK,
        &answer.with_message(message),
    ))
}

/// `DELETE /media/{videos|images}/{id}/posts/{platform}`: `202` with the item, its posts
/// there `deleting` (or already `deleted`) while jobs delete them from the platform. A
/// second request starts nothing, so it needs no `Idempotency-Key`.
async fn delete_posts(
    xf: Xf,
    caller: xf_core::Caller,
    kind: MediaKind,
    path: Result<PathParams<MediaId, Platform>, crate::error::ApiError>,
    query: Result<Query<PostDeleteQuery>, crate::error::ApiError>,
) -> Handled {
    let PathParams(id, platform) = path.map_err(|e| MediaError(e.0))?;
    let Query(query) = query.map_err(|e| MediaError(e.0))?;
    let item = xf
        .media()
        .delete_posts(&caller, kind, &id, platform, query.account.as_deref())
        .await?;
    let answer = Answer::of(&item).map_err(Error::internal)?;
    Ok(envelope::answer(
        Api::Media,
        StatusCode::ACCEPTED,
        &answer.with_message("post deletion started"),
    ))
}

/// `POST /media/{videos|images}/{id}/cancel`, once per `Idempotency-Key`: the item as it is
/// after the cancel.
async fn cancel(
    xf: Xf,
    caller: xf_core::Caller,
    kind: MediaKind,
    id: MediaId,
    write: Result<Write, crate::error::ApiError>,
) -> Handled {
    let write = write.map_err(|e| MediaError(e.0))?;
    let message = match kind {
        MediaKind::Video => "video cancelled",
        MediaKind::Image => "image cancelled",
    };
    let (xf_ref, caller_ref) = (&xf, &caller);
    let run = || async move {
        let item = xf_ref.media().cancel(caller_ref, kind, &id).await?;
        let answer = Answer::of(&item).map_err(Error::internal)?;
        Ok(answer.with_message(message))
    };
    Ok(idempotency::once(
        &xf,
        &caller,
        write.idempotency.idempotency_key.as_ref(),
        &write.fingerprint,
        Api::Media,
        StatusCode::OK,
        run,
    )
    .await)
}

async fn list(
    xf: Xf,
    caller: xf_core::Caller,
    kind: MediaKind,
    query: Result<Query<MediaListQuery>, crate::error::ApiError>,
) -> Handled {
    let Query(query) = query.map_err(|e| MediaError(e.0))?;
    let list = xf.media().list(&caller, kind, &query).await?;
    let key = match kind {
        MediaKind::Video => "videos",
        MediaKind::Image => "images",
    };
    Ok(envelope::media_data(
        StatusCode::OK,
        &json!({ key: list.items, "pagination": list.pagination }),
    ))
}

/// The upload handlers: `POST` of a form of `kind`, with its operation.
macro_rules! upload_route {
    ($name:ident, $kind:expr, path: $path:tt, summary: $summary:tt, form: $form:ident,
        encoding: $encoding:tt) => {
        #[utoipa::path(post, path = $path, tag = "media", summary = $summary,
                    params(("Idempotency-Key" = inline(Option<IdempotencyKeyText>), Header,
                        nullable = false, description = UPLOAD_IDEMPOTENCY)),
                    request_body(description = FORM_DESCRIPTION,
                        content((inline($form) = "multipart/form-data", encoding $encoding))),
                    responses(
                        (status = 201, description = "Stored", body = UploadedEnvelope),
                        (status = 400, description = UPLOAD_REFUSED),
                        (status = 413, description = "`payload_too_large`: over the size limit"),
                        (status = 429, description = TOO_MANY_UPLOADS),
                    ))]
        async fn $name(
            State(xf): State<Xf>,
            MediaCaller(caller): MediaCaller,
            request: Request,
        ) -> Handled {
            upload(xf, caller, $kind, request).await
        }
    };
}

upload_route!(upload_video, MediaKind::Video, path: "/media/videos",
    summary: "Upload a video (multipart form)", form: VideoForm,
    encoding: (("file" = (content_type = "video/mp4, video/quicktime")),
        ("thumbnail" = (content_type = "image/jpeg, image/png"))));
upload_route!(upload_video_legacy, MediaKind::Video, path: "/video/upload",
    summary: "Upload a video (the older path; same form)", form: VideoForm,
    encoding: (("file" = (content_type = "video/mp4, video/quicktime")),
        ("thumbnail" = (content_type = "image/jpeg, image/png"))));
upload_route!(upload_image, MediaKind::Image, path: "/media/images",
    summary: "Upload an image (multipart form)", form: ImageForm,
    encoding: (("file" = (content_type = "image/jpeg, image/png, image/webp"))));

/// The handlers of one kind's items (`/media/videos/…` or `/media/images/…`), each with its
/// operation: the two kinds' differ only in their paths, names, platforms and change body.
macro_rules! item_routes {
    ($kind:expr, list: $list:ident at $items:tt, $list_envelope:ident,
        get: $get:ident, update: $update:ident, delete: $delete:ident at $item:tt, $patch:ident,
        cancel: $cancel:ident at $cancel_path:tt,
        delete_posts: $delete_posts:ident at $posts_path:tt, $platform:ident) => {
        #[utoipa::path(get, path = $items, tag = "media",
            summary = "Items newest first, a page at a time",
            params(
                ("page" = inline(Option<PageNumber>), Query, description = "Page, from 1 (default 1)"),
                ("limit" = inline(Option<PageLimit>), Query, description = "Items per page, 1 to 100 (default 10)"),
                ("status" = inline(Option<StatusFilter>), Query, description = "Only items with this overall status"),
                ("platform" = inline(Option<$platform>), Query, description = "Only items that target this platform"),
            ),
            responses((status = 200, description = "A page", body = $list_envelope)))]
        async fn $list(
            State(xf): State<Xf>,
            MediaCaller(caller): MediaCaller,
            query: Result<Query<MediaListQuery>, crate::error::ApiError>,
        ) -> Handled {
            list(xf, caller, $kind, query).await
        }

        #[utoipa::path(get, path = $item, tag = "media",
            summary = "One item with its file and per-platform state",
            params(("id" = MediaId, Path)),
            responses(
                (status = 200, description = "The item", body = ItemEnvelope),
                (status = 404, description = NO_ITEM),
            ))]
        async fn $get(
            State(xf): State<Xf>,
            MediaCaller(caller): MediaCaller,
            MediaPath(id): MediaPath<MediaId>,
        ) -> Handled {
            let item = xf.media().get(&caller, $kind, &id).await?;
            Ok(envelope::media_data(StatusCode::OK, &item))
        }

        #[utoipa::path(patch, path = $item, tag = "media",
            summary = "Change the schedule, texts or settings before any post starts",
            description = "Checked as an upload of the changed item would be, platform rules included; the posts' jobs move to the new scheduledAt. The platforms stay as uploaded.",
            params(("id" = MediaId, Path)),
            request_body(content = inline($patch), content_type = "application/json"),
            responses(
                (status = 200, description = "The item as changed", body = ItemEnvelope),
                (status = 400, description = "`validation_error`: a field, a setting, or a platform's rule, each detail naming its field"),
                (status = 404, description = NO_ITEM),
                (status = 409, description = "`conflict`: a post already started (the message names its platform); cancel it instead"),
            ))]
        async fn $update(
            State(xf): State<Xf>,
            MediaCaller(caller): MediaCaller,
            MediaPath(id): MediaPath<MediaId>,
            sent: Result<Sent, crate::error::ApiError>,
        ) -> Handled {
            update(xf, caller, $kind, id, sent).await
        }

        #[utoipa::path(delete, path = $item, tag = "media",
            summary = "Delete an item and its file",
            description = "Posts not yet published are stopped (a running upload too); posts already published stay on their platforms. The file is deleted from the blob store.",
            params(("id" = MediaId, Path)),
            responses(
                (status = 200, description = "Deleted", body = DeletedEnvelope),
                (status = 404, description = NO_ITEM),
                (status = 409, description = "`conflict`: a post is being created on its platform right now (the message names it); delete once it has settled"),
            ))]
        async fn $delete(
            State(xf): State<Xf>,
            MediaCaller(caller): MediaCaller,
            MediaPath(id): MediaPath<MediaId>,
        ) -> Handled {
            delete(xf, caller, $kind, id).await
        }

        #[utoipa::path(post, path = $cancel_path, tag = "media",
            summary = "Cancel every post not yet sent to its platform",
            description = "All or none: each post whose irreversible call was not made yet becomes `cancelled` (a running upload is stopped, and nothing of it is published); the item is `cancelled` when every post is. Posts already published keep their status.",
            params(
                ("id" = MediaId, Path),
                ("Idempotency-Key" = inline(Option<IdempotencyKeyText>), Header, nullable = false,
                    description = "Retained 24 hours. A repeat with the same key replays the first response with Idempotent-Replayed: true"),
            ),
            responses(
                (status = 200, description = "The item after the cancel", body = ItemWithMessageEnvelope),
                (status = 404, description = NO_ITEM),
                (status = 409, description = "`conflict`: nothing was cancelled, as a post was already sent to its platform (the message names it) or every post is already final"),
            ))]
        async fn $cancel(
            State(xf): State<Xf>,
            MediaCaller(caller): MediaCaller,
            MediaPath(id): MediaPath<MediaId>,
            write: Result<Write, crate::error::ApiError>,
        ) -> Handled {
            cancel(xf, caller, $kind, id, write).await
        }

        #[utoipa::path(delete, path = $posts_path, tag = "media",
            summary = "Delete the item's published posts from a platform",
            description = "All or none: each published post on the platform (only the `account`'s, when given) becomes `deleting`, and a job deletes it through the platform's API (YouTube `videos.delete`, LinkedIn post deletion, Pinterest pin deletion); then it is `deleted` and `media.post.deleted` is sent. A deletion the platform refuses leaves the post `published`, with why in its `error`. Posts already being deleted, or deleted, are left as they are, so a repeat starts nothing. Instagram and TikTok have no API to delete a post.",
            params(
                ("id" = MediaId, Path),
                ("platform" = inline($platform), Path),
                ("account" = inline(Option<AccountText>), Query, description = "Only the post to this account (`channelId` for YouTube, `accountId` elsewhere); by default every post on the platform"),
            ),
            responses(
                (status = 202, description = "The item, its posts on the platform `deleting` (or already `deleted`)", body = ItemWithMessageEnvelope),
                (status = 400, description = "`validation_error`: the `account` parameter"),
                (status = 404, description = "`not_found`: no such item of this kind in the organization, or it has no post on that platform (or account)"),
                (status = 409, description = "`conflict`: the platform's API cannot delete a post (Instagram, TikTok: the message names the rule), or a post there is not published (the message names it; one still to come can be cancelled)"),
            ))]
        async fn $delete_posts(
            State(xf): State<Xf>,
            MediaCaller(caller): MediaCaller,
            path: Result<PathParams<MediaId, Platform>, crate::error::ApiError>,
            query: Result<Query<PostDeleteQuery>, crate::error::ApiError>,
        ) -> Handled {
            delete_posts(xf, caller, $kind, path, query).await
        }
    };
}

item_routes!(MediaKind::Video,
    list: list_videos at "/media/videos", VideoListEnvelope,
    get: get_video, update: update_video, delete: delete_video at "/media/videos/{id}", VideoPatch,
    cancel: cancel_video at "/media/videos/{id}/cancel",
    delete_posts: delete_video_posts at "/media/videos/{id}/posts/{platform}", VideoPlatform);
item_routes!(MediaKind::Image,
    list: list_images at "/media/images", ImageListEnvelope,
    get: get_image, update: update_image, delete: delete_image at "/media/images/{id}", ImagePatch,
    cancel: cancel_image at "/media/images/{id}/cancel",
    delete_posts: delete_image_posts at "/media/images/{id}/posts/{platform}", ImagePlatform);

#[utoipa::path(get, path = "/media/usage", tag = "media",
    summary = "This month's media meters",
    description = "This UTC month's uploads (a carousel counts once), the bytes of their files, posts published and posts deleted from their platforms, counted as they happen (a deleted item's upload still counts)",
    responses((status = 200, description = "The meters", body = UsageEnvelope)))]
async fn media_usage(State(xf): State<Xf>, MediaCaller(caller): MediaCaller) -> Handled {
    let usage = xf.media().usage(&caller).await?;
    Ok(envelope::media_data(StatusCode::OK, &usage))
}

#[utoipa::path(get, path = "/channels", tag = "media",
    summary = "Connected accounts by platform",
    responses((status = 200, description = "The channels", body = ChannelsEnvelope)))]
async fn list_channels(State(xf): State<Xf>, MediaCaller(caller): MediaCaller) -> Handled {
    let channels = xf.media().channels(&caller).await?;
    Ok(envelope::media_data(StatusCode::OK, &channels))
}
