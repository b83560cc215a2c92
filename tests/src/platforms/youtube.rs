//! YouTube's endpoints of the stand-in: Google's token grant, the channels list, resumable
//! video uploads, custom thumbnails and deletion, as the YouTube Data API documents them.

use super::*;

/// `bytes a-b/N` as `(Some((a, b)), N)`, `bytes */N` as `(None, N)`.
pub(super) fn parse_content_range(value: &str) -> Option<(Option<(u64, u64)>, u64)> {
    let spec = value.strip_prefix("bytes ")?;
    let (span, total) = spec.split_once('/')?;
    let total: u64 = total.parse().ok()?;
    if span == "*" {
        return Some((None, total));
    }
    let (a, b) = span.split_once('-')?;
    Some((Some((a.parse().ok()?, b.parse().ok()?)), total))
}

pub(super) fn youtube_token(inner: &Inner, text: &str) -> Response {
    let fields = form(text);
    if fields.get("client_id").map(String::as_str) != Some(YOUTUBE_CLIENT_ID)
        || fields.get("client_secret").map(String::as_str) != Some(YOUTUBE_CLIENT_SECRET)
    {
        return answer(
            401,
            json!({"error": "invalid_client", "error_description": "The OAuth client was not found."}),
            None,
        );
    }
    if fields.get("grant_type").map(String::as_str) == Some("authorization_code") {
        let fields: std::collections::BTreeMap<String, String> = fields.into_iter().collect();
        return match inner.auth["youtube"].redeem(&fields, YOUTUBE_CLIENT_ID) {
            Ok(access) => {
                let mut state = inner.state();
                let refresh = state.consenting.get(&access).and_then(|(r, _)| r.clone());
                state.access_tokens.insert(access.clone());
                if let Some(refresh) = &refresh {
                    state.refresh_tokens.insert(refresh.clone(), access.clone());
                }
                answer(
                    200,
                    json!({"access_token": access, "refresh_token": refresh, "expires_in": 3599,
                        "scope": format!("{YOUTUBE_UPLOAD_SCOPE} {YOUTUBE_FORCE_SSL_SCOPE}"),
                        "token_type": "Bearer"}),
                    None,
                )
            }
            Err((error, description)) => answer(
                400,
                json!({"error": error, "error_description": description}),
                None,
            ),
        };
    }
    if fields.get("grant_type").map(String::as_str) != Some("refresh_token") {
        return answer(
            400,
            json!({"error": "unsupported_grant_type", "error_description": "Invalid grant_type"}),
            None,
        );
    }
    let mut state = inner.state();
    let refreshed = fields
        .get("refresh_token")
        .and_then(|t| state.refresh_tokens.get(t))
        .cloned();
    match refreshed {
        Some(access) => {
            state.access_tokens.insert(access.clone());
            answer(
                200,
                json!({"access_token": access, "expires_in": 3599, "scope": "https://www.googleapis.com/auth/youtube.upload", "token_type": "Bearer"}),
                None,
            )
        }
        None => answer(
            400,
            json!({"error": "invalid_grant", "error_description": "Token has been expired or revoked."}),
            None,
        ),
    }
}

/// `GET /youtube/v3/channels?part=snippet&mine=true`: the channels of the token's account.
pub(super) fn youtube_channels(
    inner: &Inner,
    headers: &HeaderMap,
    query: &HashMap<String, String>,
) -> Response {
    let state = inner.state();
    let Some(token) = bearer(headers).filter(|t| state.access_tokens.contains(t)) else {
        return google_error(401, "authError", "Invalid Credentials");
    };
    let parts: Vec<&str> = query
        .get("part")
        .map(|p| p.split(',').collect())
        .unwrap_or_default();
    if !parts.contains(&"snippet") || query.get("mine").map(String::as_str) != Some("true") {
        return google_error(
            400,
            "invalidParameter",
            "part=snippet and mine=true are expected",
        );
    }
    let items: Vec<Value> = state
        .consenting
        .get(&token)
        .map(|(_, channels)| channels.as_slice())
        .unwrap_or_default()
        .iter()
        .map(|(id, title)| {
            json!({"kind": "youtube#channel", "etag": "e", "id": id, "snippet": {
                "title": title, "description": "",
                "thumbnails": {"default": {"url": format!("https://yt3.example/{id}.jpg"), "width": 88, "height": 88}}
            }})
        })
        .collect();
    answer(
        200,
        json!({"kind": "youtube#channelListResponse", "etag": "e",
            "pageInfo": {"totalResults": items.len(), "resultsPerPage": 50}, "items": items}),
        None,
    )
}

pub(super) fn youtube_session(
    inner: &Inner,
    headers: &HeaderMap,
    query: &HashMap<String, String>,
    text: &str,
) -> Response {
    let mut state = inner.state();
    if !bearer(headers).is_some_and(|t| state.access_tokens.contains(&t)) {
        return google_error(401, "authError", "Invalid Credentials");
    }
    let parts: HashSet<&str> = query
        .get("part")
        .map(|p| p.split(',').collect())
        .unwrap_or_default();
    if query.get("uploadType").map(String::as_str) != Some("resumable")
        || !parts.contains("snippet")
        || !parts.contains("status")
    {
        return google_error(
            400,
            "invalidParameter",
            "uploadType=resumable and part=snippet,status are required",
        );
    }
    let content_type = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    let size = headers
        .get("x-upload-content-length")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    let media_type = headers
        .get("x-upload-content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    let metadata: Option<Value> = serde_json::from_str(text).ok();
    let (Some(size), Some(metadata)) = (size, metadata) else {
        return google_error(
            400,
            "badRequest",
            "X-Upload-Content-Length and a JSON body are required",
        );
    };
    if !content_type.starts_with("application/json") || !media_type.starts_with("video/") {
        return google_error(
            400,
            "badContent",
            "the metadata must be JSON and the media a video",
        );
    }
    let title = metadata["snippet"]["title"].as_str().unwrap_or("");
    let privacy = metadata["status"]["privacyStatus"].as_str().unwrap_or("");
    if title.is_empty() || title.chars().count() > 100 {
        return google_error(
            400,
            "invalidTitle",
            "The request metadata specifies an invalid video title.",
        );
    }
    if !["public", "private", "unlisted"].contains(&privacy) {
        return google_error(
            400,
            "invalidVideoMetadata",
            "The request metadata specifies an invalid privacy status.",
        );
    }
    state.next_id += 1;
    let id = format!("upload-{}", state.next_id);
    state.sessions.insert(
        id.clone(),
        Session {
            size,
            received: Vec::new(),
            metadata,
            video: None,
        },
    );
    let location = format!(
        "{}/youtube/upload/youtube/v3/videos?uploadType=resumable&upload_id={id}",
        inner.base_url
    );
    let mut response = answer(200, json!({}), None);
    response
        .headers_mut()
        .insert(header::LOCATION, location.parse().expect("a header value"));
    response
}

pub(super) fn youtube_chunk(
    inner: &Inner,
    headers: &HeaderMap,
    query: &HashMap<String, String>,
    body: &[u8],
) -> Response {
    let mut state = inner.state();
    if !bearer(headers).is_some_and(|t| state.access_tokens.contains(&t)) {
        return google_error(401, "authError", "Invalid Credentials");
    }
    let range = headers
        .get(header::CONTENT_RANGE)
        .and_then(|v| v.to_str().ok())
        .and_then(parse_content_range);
    let next_id = state.next_id + 1;
    let Some(session) = query
        .get("upload_id")
        .and_then(|id| state.sessions.get_mut(id))
    else {
        return google_error(404, "notFound", "The upload session does not exist.");
    };
    let Some((span, total)) = range.filter(|(_, total)| *total == session.size) else {
        return google_error(
            400,
            "badContentRange",
            "Content-Range must be bytes a-b/N or bytes */N with the session's N",
        );
    };
    let made = match span {
        None if body.is_empty() => false,
        None => return google_error(400, "badContentRange", "a status probe has no body"),
        Some((first, last)) => {
            let have = session.received.len() as u64;
            let len = last.checked_sub(first).map(|d| d + 1);
            if session.video.is_some() {
                return google_error(400, "uploadComplete", "The upload is already complete.");
            }
            if first != have || len != Some(body.len() as u64) || last >= total {
                return google_error(
                    400,
                    "badContentRange",
                    "the chunk does not continue the upload",
                );
            }
            if last + 1 != total && (last + 1) % CHUNK_UNIT != 0 {
                return google_error(
                    400,
                    "badChunkSize",
                    "chunks but the last must be multiples of 256 KiB",
                );
            }
            session.received.extend_from_slice(body);
            if last + 1 == total {
                let video = json!({
                    "kind": "youtube#video",
                    "id": format!("vid{next_id:08}"),
                    "snippet": session.metadata["snippet"],
                    "status": {"uploadStatus": "uploaded",
                               "privacyStatus": session.metadata["status"]["privacyStatus"]},
                });
                session.video = Some(video);
                true
            } else {
                false
            }
        }
    };
    if let Some(video) = session.video.clone() {
        if made {
            state.next_id = next_id;
            state.videos.push(video.clone());
            return answer(201, video, None);
        }
        return answer(200, video, None);
    }
    let have = session.received.len();
    let mut response = (StatusCode::PERMANENT_REDIRECT, "").into_response();
    if have > 0 {
        response.headers_mut().insert(
            header::RANGE,
            format!("bytes=0-{}", have - 1)
                .parse()
                .expect("a header value"),
        );
    }
    response
}

/// `thumbnails.set` as YouTube's Data API documents it: a media upload to
/// `/upload/youtube/v3/thumbnails/set?videoId=…`, the image as the body (`image/jpeg` or
/// `image/png`, at most 2 MB), answered with a `youtube#thumbnailSetResponse`.
pub(super) fn youtube_thumbnail(
    inner: &Inner,
    headers: &HeaderMap,
    query: &HashMap<String, String>,
    body: &[u8],
) -> Response {
    let mut state = inner.state();
    if !bearer(headers).is_some_and(|t| state.access_tokens.contains(&t)) {
        return google_error(401, "authError", "Invalid Credentials");
    }
    let content_type = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_owned();
    let magic_ok = match content_type.as_str() {
        "image/jpeg" => ImageFormat::of(body) == Some(ImageFormat::Jpeg),
        "image/png" => ImageFormat::of(body) == Some(ImageFormat::Png),
        _ => false,
    };
    if !magic_ok || body.is_empty() {
        return google_error(
            400,
            "invalidImage",
            "The thumbnail is not a JPEG or PNG image.",
        );
    }
    if body.len() > 2 << 20 {
        return google_error(
            413,
            "mediaBodyTooLarge",
            "The thumbnail is larger than 2 MB.",
        );
    }
    let video = query.get("videoId").cloned().unwrap_or_default();
    if !state.videos.iter().any(|v| v["id"] == video.as_str()) {
        return google_error(404, "videoNotFound", "The video could not be found.");
    }
    state.thumbnails.push((video, content_type, body.to_vec()));
    answer(
        200,
        json!({"kind": "youtube#thumbnailSetResponse", "etag": "e",
            "items": [{"default": {"url": "https://i.ytimg.com/vi/x/default.jpg", "width": 120, "height": 90}}]}),
        None,
    )
}

/// `videos.delete` as YouTube's Data API documents it: `DELETE /youtube/v3/videos?id=…`, no
/// body, `204 No Content`; a video the channel does not have is `404 videoNotFound`.
pub(super) fn youtube_delete(
    inner: &Inner,
    headers: &HeaderMap,
    query: &HashMap<String, String>,
    body: &[u8],
) -> Response {
    let mut state = inner.state();
    if !bearer(headers).is_some_and(|t| state.access_tokens.contains(&t)) {
        return google_error(401, "authError", "Invalid Credentials");
    }
    let Some(id) = query.get("id").filter(|id| !id.is_empty()) else {
        return google_error(400, "missingRequiredParameter", "No filter selected.");
    };
    if !body.is_empty() {
        return google_error(400, "badRequest", "videos.delete takes no body");
    }
    let made = state.videos.iter().any(|v| v["id"] == id.as_str());
    let gone = state
        .deleted
        .iter()
        .any(|(p, d)| *p == "youtube" && d == id);
    if !made || gone {
        return google_error(
            404,
            "videoNotFound",
            "The video that you are trying to delete cannot be found.",
        );
    }
    state.deleted.push(("youtube", id.clone()));
    StatusCode::NO_CONTENT.into_response()
}
