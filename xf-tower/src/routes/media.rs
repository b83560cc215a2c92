//! The media publishing API: uploads (multipart, streamed to the blob store), media items and
//! lists, and connected channels. Its envelopes are the media spec's: `{success: true, data}`
//! and `{success: false, error: {code, message, details?}}`, each with `meta.requestId`.
//! Keys come as `X-API-Key` or `Authorization: Bearer`; the plan needs `mediaApi`.

use axum::extract::{Request, State};
use axum::response::{IntoResponse, Response};
use axum::routing::{any, get, post};
use axum::Router;
use http::StatusCode;
use serde_json::json;
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

/// The media API at `prefix` (`""` for none): its routes (each handler authenticating and
/// counting its request with [`MediaCaller`]), and its own answers to a method a route does
/// not take (`405`) and to unknown paths below `/media/` and `/channels/` (`404`), all in its
/// envelope. A service that merges it keeps its own fallback for every other path.
pub fn router(prefix: &'static str) -> Router<Xf> {
    let routes = Routes::new(prefix, Default::default())
        .route("/media/videos", post(upload_video).get(list_videos))
        .route("/media/images", post(upload_image).get(list_images))
        .route(
            "/media/videos/{id}",
            get(get_video).patch(update_video).delete(delete_video),
        )
        .route(
            "/media/images/{id}",
            get(get_image).patch(update_image).delete(delete_image),
        )
        .route("/media/videos/{id}/cancel", post(cancel_video))
        .route("/media/images/{id}/cancel", post(cancel_image))
        .route(
            "/media/videos/{id}/posts/{platform}",
            axum::routing::delete(delete_video_posts),
        )
        .route(
            "/media/images/{id}/posts/{platform}",
            axum::routing::delete(delete_image_posts),
        )
        .route("/video/upload", post(upload_video))
        .route("/channels", get(list_channels))
        .route("/media/usage", get(media_usage));
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
        .0
}

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

async fn upload_video(
    State(xf): State<Xf>,
    MediaCaller(caller): MediaCaller,
    request: Request,
) -> Handled {
    upload(xf, caller, MediaKind::Video, request).await
}

async fn upload_image(
    State(xf): State<Xf>,
    MediaCaller(caller): MediaCaller,
    request: Request,
) -> Handled {
    upload(xf, caller, MediaKind::Image, request).await
}

async fn get_video(
    State(xf): State<Xf>,
    MediaCaller(caller): MediaCaller,
    MediaPath(id): MediaPath<MediaId>,
) -> Handled {
    let item = xf.media().get(&caller, MediaKind::Video, &id).await?;
    Ok(envelope::media_data(StatusCode::OK, &item))
}

async fn get_image(
    State(xf): State<Xf>,
    MediaCaller(caller): MediaCaller,
    MediaPath(id): MediaPath<MediaId>,
) -> Handled {
    let item = xf.media().get(&caller, MediaKind::Image, &id).await?;
    Ok(envelope::media_data(StatusCode::OK, &item))
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

async fn update_video(
    State(xf): State<Xf>,
    MediaCaller(caller): MediaCaller,
    MediaPath(id): MediaPath<MediaId>,
    sent: Result<Sent, crate::error::ApiError>,
) -> Handled {
    update(xf, caller, MediaKind::Video, id, sent).await
}

async fn update_image(
    State(xf): State<Xf>,
    MediaCaller(caller): MediaCaller,
    MediaPath(id): MediaPath<MediaId>,
    sent: Result<Sent, crate::error::ApiError>,
) -> Handled {
    update(xf, caller, MediaKind::Image, id, sent).await
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

async fn delete_video(
    State(xf): State<Xf>,
    MediaCaller(caller): MediaCaller,
    MediaPath(id): MediaPath<MediaId>,
) -> Handled {
    delete(xf, caller, MediaKind::Video, id).await
}

async fn delete_image(
    State(xf): State<Xf>,
    MediaCaller(caller): MediaCaller,
    MediaPath(id): MediaPath<MediaId>,
) -> Handled {
    delete(xf, caller, MediaKind::Image, id).await
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

async fn delete_video_posts(
    State(xf): State<Xf>,
    MediaCaller(caller): MediaCaller,
    path: Result<PathParams<MediaId, Platform>, crate::error::ApiError>,
    query: Result<Query<PostDeleteQuery>, crate::error::ApiError>,
) -> Handled {
    delete_posts(xf, caller, MediaKind::Video, path, query).await
}

async fn delete_image_posts(
    State(xf): State<Xf>,
    MediaCaller(caller): MediaCaller,
    path: Result<PathParams<MediaId, Platform>, crate::error::ApiError>,
    query: Result<Query<PostDeleteQuery>, crate::error::ApiError>,
) -> Handled {
    delete_posts(xf, caller, MediaKind::Image, path, query).await
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

async fn cancel_video(
    State(xf): State<Xf>,
    MediaCaller(caller): MediaCaller,
    MediaPath(id): MediaPath<MediaId>,
    write: Result<Write, crate::error::ApiError>,
) -> Handled {
    cancel(xf, caller, MediaKind::Video, id, write).await
}

async fn cancel_image(
    State(xf): State<Xf>,
    MediaCaller(caller): MediaCaller,
    MediaPath(id): MediaPath<MediaId>,
    write: Result<Write, crate::error::ApiError>,
) -> Handled {
    cancel(xf, caller, MediaKind::Image, id, write).await
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

async fn list_videos(
    State(xf): State<Xf>,
    MediaCaller(caller): MediaCaller,
    query: Result<Query<MediaListQuery>, crate::error::ApiError>,
) -> Handled {
    list(xf, caller, MediaKind::Video, query).await
}

async fn list_images(
    State(xf): State<Xf>,
    MediaCaller(caller): MediaCaller,
    query: Result<Query<MediaListQuery>, crate::error::ApiError>,
) -> Handled {
    list(xf, caller, MediaKind::Image, query).await
}

async fn media_usage(State(xf): State<Xf>, MediaCaller(caller): MediaCaller) -> Handled {
    let usage = xf.media().usage(&caller).await?;
    Ok(envelope::media_data(StatusCode::OK, &usage))
}

async fn list_channels(State(xf): State<Xf>, MediaCaller(caller): MediaCaller) -> Handled {
    let channels = xf.media().channels(&caller).await?;
    Ok(envelope::media_data(StatusCode::OK, &channels))
}
