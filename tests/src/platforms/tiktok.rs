//! TikTok's endpoints of the stand-in: the creator info, the Content Posting API's video and
//! photo inits (pulled from URLs or uploaded in chunks), the chunk uploads and the publish
//! status.

use super::*;

/// `creator_info/query`'s `data`, shaped as TikTok documents it.
pub(super) fn creator_data(privacy_levels: &[&str], max_video_seconds: u64) -> Value {
    json!({
        "creator_avatar_url": "https://p16-sign-va.tiktokcdn.com/avatar.jpeg",
        "creator_username": "tt-creator",
        "creator_nickname": "TT Creator",
        "privacy_level_options": privacy_levels,
        "comment_disabled": false,
        "duet_disabled": false,
        "stitch_disabled": true,
        "max_video_post_duration_sec": max_video_seconds,
    })
}

pub(super) fn tiktok_error(status: u16, code: &str, message: &str) -> Response {
    answer(
        status,
        json!({"error": {"code": code, "message": message, "log_id": "202611161020"}}),
        None,
    )
}

pub(super) fn tiktok_ok(data: Value) -> Response {
    answer(
        200,
        json!({"data": data, "error": {"code": "ok", "message": "", "log_id": "202611161020"}}),
        None,
    )
}

/// The caller of a Content Posting call: a known bearer token and a JSON content type, as
/// TikTok requires of each; the token.
pub(super) fn tiktok_caller(inner: &Inner, headers: &HeaderMap) -> Result<String, Box<Response>> {
    let Some(token) = bearer(headers).filter(|t| inner.state().access_tokens.contains(t)) else {
        return Err(Box::new(tiktok_error(
            401,
            "access_token_invalid",
            "The access token is invalid or not found in the request.",
        )));
    };
    if !headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/json"))
    {
        return Err(Box::new(tiktok_error(
            400,
            "invalid_params",
            "Content-Type must be application/json",
        )));
    }
    Ok(token)
}

/// `creator_info/query` (TikTok's Query Creator Info reference): a bearer token, JSON content
/// type, no body; `data` as the test set it.
pub(super) fn tiktok_creator_info(inner: &Inner, headers: &HeaderMap) -> Response {
    let token = match tiktok_caller(inner, headers) {
        Ok(token) => token,
        Err(refused) => return *refused,
    };
    let mut state = inner.state();
    state.tiktok_creator_asked.insert(token);
    tiktok_ok(state.tiktok_creator.clone())
}

pub(super) async fn tiktok_init(
    inner: &Inner,
    path: &str,
    headers: &HeaderMap,
    text: &str,
) -> Response {
    if let Err(refused) = tiktok_caller(inner, headers) {
        return *refused;
    }
    let Ok(body) = serde_json::from_str::<Value>(text) else {
        return tiktok_error(400, "invalid_params", "the body is not JSON");
    };
    let privacy_ok = |info: &Value| {
        [
            "PUBLIC_TO_EVERYONE",
            "MUTUAL_FOLLOW_FRIENDS",
            "FOLLOWER_OF_CREATOR",
            "SELF_ONLY",
        ]
        .contains(&info["privacy_level"].as_str().unwrap_or(""))
    };
    let photo = path.ends_with("/content/init/");
    let inbox = path.ends_with("/inbox/video/init/");
    // `video_cover_timestamp_ms` (direct video posts): the cover frame, an integer.
    let cover = &body["post_info"]["video_cover_timestamp_ms"];
    if !cover.is_null() && (photo || !cover.is_u64()) {
        return tiktok_error(
            400,
            "invalid_params",
            "post_info.video_cover_timestamp_ms is a video's cover frame in milliseconds",
        );
    }
    let direct = if photo {
        body["post_mode"] == "DIRECT_POST"
    } else {
        !inbox
    };
    if direct {
        let state = inner.state();
        if !bearer(headers).is_some_and(|t| state.tiktok_creator_asked.contains(&t)) {
            return tiktok_error(
                400,
                "invalid_params",
                "query creator_info before a direct post (Content Posting guidelines)",
            );
        }
        let privacy = body["post_info"]["privacy_level"].as_str().unwrap_or("");
        let allowed = state.tiktok_creator["privacy_level_options"]
            .as_array()
            .is_some_and(|options| options.iter().any(|o| o == privacy));
        if !allowed {
            return tiktok_error(
                403,
                "privacy_level_option_mismatch",
                "privacy_level is not among the creator's privacy_level_options",
            );
        }
    }
    if photo {
        let images = body["source_info"]["photo_images"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        if body["media_type"] != "PHOTO"
            || body["source_info"]["source"] != "PULL_FROM_URL"
            || images.is_empty()
            || !["DIRECT_POST", "MEDIA_UPLOAD"].contains(&body["post_mode"].as_str().unwrap_or(""))
            || (body["post_mode"] == "DIRECT_POST" && !privacy_ok(&body["post_info"]))
        {
            return tiktok_error(400, "invalid_params", "a photo post needs media_type PHOTO, post_mode, PULL_FROM_URL photo_images and a privacy level");
        }
        let urls: Vec<&str> = images.iter().filter_map(Value::as_str).collect();
        if urls.len() != images.len() || urls.len() > 35 {
            return tiktok_error(
                400,
                "invalid_params",
                "source_info.photo_images must be 1 to 35 image URLs",
            );
        }
        let cover = body["source_info"]["photo_cover_index"].as_u64();
        if cover.is_none_or(|index| index >= urls.len() as u64) {
            return tiktok_error(
                400,
                "invalid_params",
                "source_info.photo_cover_index must be the index of one of photo_images",
            );
        }
        let mut sizes = Vec::new();
        for url in &urls {
            match fetch_image(&inner.client, url, &[ImageFormat::Jpeg, ImageFormat::Webp]).await {
                Ok(size) => sizes.push(size),
                Err(why) => {
                    return tiktok_error(
                        400,
                        "invalid_params",
                        &format!("photo could not be pulled: {why}"),
                    )
                }
            }
        }
        let mut state = inner.state();
        state.next_id += 1;
        let id = format!("p_pub_url~{}", state.next_id);
        let inbox = body["post_mode"] == "MEDIA_UPLOAD";
        state.tiktok.insert(
            id.clone(),
            TiktokPublish {
                size: 0,
                chunk: 0,
                count: 0,
                received: 0,
                inbox,
                photo: true,
                post_id: None,
            },
        );
        if sizes.len() >= 2 {
            state.carousels.push(("tiktok", id.clone(), sizes));
        }
        return tiktok_ok(json!({"publish_id": id}));
    }
    if !inbox
        && (!privacy_ok(&body["post_info"])
            || body["post_info"]["title"]
                .as_str()
                .is_some_and(|t| t.chars().count() > 2200))
    {
        return tiktok_error(
            400,
            "invalid_params",
            "post_info needs a privacy_level, and a title of at most 2200 characters",
        );
    }
    let source = &body["source_info"];
    let (Some(size), Some(chunk), Some(count)) = (
        source["video_size"].as_u64(),
        source["chunk_size"].as_u64(),
        source["total_chunk_count"].as_u64(),
    ) else {
        return tiktok_error(
            400,
            "invalid_params",
            "source_info needs video_size, chunk_size and total_chunk_count",
        );
    };
    let single = count == 1 && chunk == size;
    let ruled = (5 * MB..=64 * MB).contains(&chunk) && count == size / chunk;
    if source["source"] != "FILE_UPLOAD" || !(single || ruled) {
        return tiktok_error(
            400,
            "invalid_params",
            "the chunk plan breaks TikTok's rules",
        );
    }
    let mut state = inner.state();
    state.next_id += 1;
    let n = state.next_id;
    let id = format!("v_pub_file~{n}");
    state.tiktok.insert(
        id.clone(),
        TiktokPublish {
            size,
            chunk,
            count,
            received: 0,
            inbox,
            photo: false,
            post_id: None,
        },
    );
    tiktok_ok(json!({"publish_id": id,
        "upload_url": format!("{}/tiktok/upload/?upload_id={}", inner.base_url, id)}))
}

pub(super) fn tiktok_chunk(
    inner: &Inner,
    headers: &HeaderMap,
    query: &HashMap<String, String>,
    body: &[u8],
) -> Response {
    let mut state = inner.state();
    let next = state.next_id + 1;
    let Some(publish) = query
        .get("upload_id")
        .and_then(|id| state.tiktok.get_mut(id))
    else {
        return tiktok_error(404, "invalid_params", "unknown upload");
    };
    let range = headers
        .get(header::CONTENT_RANGE)
        .and_then(|v| v.to_str().ok())
        .and_then(parse_content_range);
    let Some((Some((first, last)), total)) = range else {
        return tiktok_error(400, "invalid_params", "Content-Range must be bytes a-b/N");
    };
    let index = first.checked_div(publish.chunk).unwrap_or(0);
    let expected_last = if index + 1 >= publish.count {
        publish.size - 1
    } else {
        first + publish.chunk - 1
    };
    if total != publish.size
        || first != publish.received
        || last != expected_last
        || body.len() as u64 != last - first + 1
    {
        return tiktok_error(
            400,
            "invalid_params",
            "the chunk does not follow the upload's plan",
        );
    }
    publish.received = last + 1;
    if publish.received == publish.size {
        if !publish.inbox {
            publish.post_id = Some(format!("73{next:015}"));
            state.next_id = next;
        }
        return (StatusCode::CREATED, "").into_response();
    }
    (StatusCode::PARTIAL_CONTENT, "").into_response()
}

pub(super) fn tiktok_status(inner: &Inner, headers: &HeaderMap, text: &str) -> Response {
    let mut state = inner.state();
    if !bearer(headers).is_some_and(|t| state.access_tokens.contains(&t)) {
        return tiktok_error(
            401,
            "access_token_invalid",
            "The access token is invalid or not found in the request.",
        );
    }
    let body: Value = serde_json::from_str(text).unwrap_or(Value::Null);
    let next = state.next_id + 1;
    let Some(publish) = body["publish_id"]
        .as_str()
        .and_then(|id| state.tiktok.get_mut(id))
    else {
        return tiktok_error(400, "invalid_publish_id", "publish_id is not valid");
    };
    let complete = publish.photo || publish.received == publish.size;
    if publish.photo && !publish.inbox && publish.post_id.is_none() {
        publish.post_id = Some(format!("74{next:015}"));
        state.next_id = next;
    }
    let Some(publish) = body["publish_id"]
        .as_str()
        .and_then(|id| state.tiktok.get(id))
    else {
        return tiktok_error(400, "invalid_publish_id", "publish_id is not valid");
    };
    let (status, ids) = match (complete, publish.inbox, &publish.post_id) {
        (false, _, _) => ("PROCESSING_UPLOAD", json!([])),
        (true, true, _) => ("SEND_TO_USER_INBOX", json!([])),
        (true, false, Some(id)) => ("PUBLISH_COMPLETE", json!([id.parse::<u64>().unwrap_or(0)])),
        (true, false, None) => ("PROCESSING_DOWNLOAD", json!([])),
    };
    tiktok_ok(json!({"status": status, "uploaded_bytes": publish.received,
        "publicaly_available_post_id": ids}))
}
