//! Pinterest's endpoints of the stand-in: video media registration and upload, pins of a video,
//! an image or several images (each fetched), and deletion, as API v5 documents them.

use super::*;

/// Pin deletion as Pinterest's API v5 documents it: `DELETE /v5/pins/{pin_id}`, `204`; a pin
/// that does not exist (or was deleted) is `404`.
pub(super) fn pinterest_delete(
    inner: &Inner,
    path: &str,
    headers: &HeaderMap,
    body: &[u8],
) -> Response {
    let mut state = inner.state();
    if !bearer(headers).is_some_and(|t| state.access_tokens.contains(&t)) {
        return pinterest_error(401, 2, "Authentication failed.");
    }
    if !body.is_empty() {
        return pinterest_error(400, 1, "a delete takes no body");
    }
    let id = path.trim_start_matches("/pinterest/v5/pins/").to_owned();
    let made = state.pins.iter().any(|p| p["id"] == id.as_str());
    let gone = state
        .deleted
        .iter()
        .any(|(p, d)| *p == "pinterest" && *d == id);
    if !made || gone {
        return pinterest_error(404, 50, "Pin not found.");
    }
    state.deleted.push(("pinterest", id));
    StatusCode::NO_CONTENT.into_response()
}

pub(super) fn pinterest_error(status: u16, code: i64, message: &str) -> Response {
    answer(status, json!({"code": code, "message": message}), None)
}

pub(super) fn pinterest_media(
    inner: &Inner,
    method: &Method,
    path: &str,
    headers: &HeaderMap,
    text: &str,
) -> Response {
    let mut state = inner.state();
    if !bearer(headers).is_some_and(|t| state.access_tokens.contains(&t)) {
        return pinterest_error(401, 2, "Authentication failed.");
    }
    if method == Method::POST {
        let body: Value = serde_json::from_str(text).unwrap_or(Value::Null);
        if body["media_type"] != "video" {
            return pinterest_error(400, 1, "media_type must be video");
        }
        state.next_id += 1;
        let id = format!("{}", 5_000_000 + state.next_id);
        state.pinterest_media.insert(id.clone(), (false, 0));
        return answer(
            201,
            json!({"media_id": id, "media_type": "video",
            "upload_url": format!("{}/pinterest/s3", inner.base_url),
            "upload_parameters": {"key": format!("uploads/{id}.mp4"), "Content-Type": "multipart/form-data",
                "x-amz-signature": "sig", "policy": "cG9saWN5", "x-amz-credential": "cred"}}),
            None,
        );
    }
    let id = path.rsplit('/').next().unwrap_or("");
    let Some(media) = state.pinterest_media.get_mut(id) else {
        return pinterest_error(404, 3, "Media not found.");
    };
    media.1 += 1;
    let status = match (media.0, media.1) {
        (false, _) => "registered",
        (true, 1) => "processing",
        _ => "succeeded",
    };
    answer(
        200,
        json!({"media_id": id, "media_type": "video", "status": status}),
        None,
    )
}

/// The S3-style upload form: every upload parameter as a field, then `file`.
pub(super) fn pinterest_upload(inner: &Inner, headers: &HeaderMap, body: &[u8]) -> Response {
    let content_type = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    let Some(boundary) = content_type.strip_prefix("multipart/form-data; boundary=") else {
        return (StatusCode::BAD_REQUEST, "not a multipart form").into_response();
    };
    let text = String::from_utf8_lossy(body);
    let fields: Vec<String> = text
        .split(&format!("--{boundary}"))
        .filter_map(|part| {
            let start = part.find("name=\"")? + 6;
            let end = part[start..].find('"')?;
            Some(part[start..start + end].to_owned())
        })
        .collect();
    let required = [
        "key",
        "policy",
        "x-amz-signature",
        "x-amz-credential",
        "Content-Type",
    ];
    let file_last = fields.last().map(String::as_str) == Some("file");
    if !required.iter().all(|r| fields.iter().any(|f| f == r)) || !file_last {
        return (
            StatusCode::FORBIDDEN,
            "the upload parameters must all be sent, then the file",
        )
            .into_response();
    }
    let key_at = text.find("uploads/").unwrap_or(0);
    let id: String = text[key_at..]
        .trim_start_matches("uploads/")
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    if let Some(media) = inner.state().pinterest_media.get_mut(&id) {
        media.0 = true;
    }
    (StatusCode::NO_CONTENT, "").into_response()
}

pub(super) async fn pinterest_pin(
    inner: &Inner,
    method: &Method,
    path: &str,
    headers: &HeaderMap,
    text: &str,
) -> Response {
    if !bearer(headers).is_some_and(|t| inner.state().access_tokens.contains(&t)) {
        return pinterest_error(401, 2, "Authentication failed.");
    }
    if method == Method::GET {
        let board = path
            .trim_start_matches("/pinterest/v5/boards/")
            .trim_end_matches("/pins");
        let items: Vec<Value> = inner
            .state()
            .pins
            .iter()
            .rev()
            .filter(|p| p["board_id"] == board)
            .cloned()
            .collect();
        return answer(200, json!({"items": items, "bookmark": null}), None);
    }
    let body: Value = serde_json::from_str(text).unwrap_or(Value::Null);
    let source = &body["media_source"];
    let board = body["board_id"].as_str().unwrap_or("");
    if board.is_empty()
        || body["title"]
            .as_str()
            .is_some_and(|t| t.chars().count() > 100)
        || body["description"]
            .as_str()
            .is_some_and(|d| d.chars().count() > 800)
    {
        return pinterest_error(400, 1, "Invalid parameters: board_id, title or description");
    }
    // The sizes of a carousel pin's images, in order.
    let mut sizes = Vec::new();
    match source["source_type"].as_str() {
        Some("video_id") => {
            let ready = source["media_id"]
                .as_str()
                .and_then(|id| inner.state().pinterest_media.get(id).copied());
            let has_cover = source["cover_image_url"].is_string()
                || source["cover_image_key_frame_time"].is_u64();
            if ready.is_none_or(|(uploaded, reads)| !uploaded || reads < 2) || !has_cover {
                return pinterest_error(400, 1, "The video is not ready, or no cover was given");
            }
        }
        Some("image_url") => {
            let url = source["url"].as_str().unwrap_or("");
            if let Err(why) = fetch_image(&inner.client, url, &[ImageFormat::Jpeg]).await {
                return pinterest_error(400, 1, &format!("The image could not be fetched: {why}"));
            }
        }
        Some("multiple_image_urls") => {
            let urls = match pinterest_items(source) {
                Ok(urls) => urls,
                Err(refused) => return *refused,
            };
            let formats = [ImageFormat::Jpeg, ImageFormat::Png, ImageFormat::Webp];
            for url in &urls {
                match fetch_image(&inner.client, url, &formats).await {
                    Ok(size) => sizes.push(size),
                    Err(why) => {
                        return pinterest_error(
                            400,
                            1,
                            &format!("An image could not be fetched: {why}"),
                        )
                    }
                }
            }
        }
        _ => {
            return pinterest_error(
                400,
                1,
                "media_source.source_type must be video_id, image_url or multiple_image_urls",
            )
        }
    }
    let mut state = inner.state();
    state.next_id += 1;
    let id = format!("98{:014}", state.next_id);
    let pin = json!({"id": id, "board_id": board,
        "title": body["title"], "description": body["description"],
        "media": {"media_type": source["source_type"]}});
    state.pins.push(pin.clone());
    if sizes.len() >= 2 {
        state.carousels.push(("pinterest", id, sizes));
    }
    answer(201, pin, None)
}

/// The image URLs of a `multiple_image_urls` media source: 2 to 5 `items`, each `{"url",
/// "title"?, "description"?, "link"?}`, and an optional `index` among them.
pub(super) fn pinterest_items(source: &Value) -> Result<Vec<String>, Box<Response>> {
    let Some(items) = source["items"]
        .as_array()
        .filter(|items| (2..=5).contains(&items.len()))
    else {
        return Err(Box::new(pinterest_error(
            400,
            1,
            "media_source.items must hold 2 to 5 images",
        )));
    };
    let index_ok = source
        .get("index")
        .is_none_or(|index| index.as_u64().is_some_and(|i| i < items.len() as u64));
    if !index_ok {
        return Err(Box::new(pinterest_error(
            400,
            1,
            "media_source.index must be the position of one of its items",
        )));
    }
    let mut urls = Vec::new();
    for item in items {
        let texts_ok = ["title", "description", "link"]
            .into_iter()
            .all(|name| item.get(name).is_none_or(Value::is_string));
        match item["url"].as_str() {
            Some(url) if item.is_object() && texts_ok => urls.push(url.to_owned()),
            _ => {
                return Err(Box::new(pinterest_error(
                    400,
                    1,
                    "each item is {\"url\", \"title\"?, \"description\"?, \"link\"?}",
                )))
            }
        }
    }
    Ok(urls)
}
