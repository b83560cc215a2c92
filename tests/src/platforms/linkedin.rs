//! LinkedIn's endpoints of the stand-in: image and video uploads (`initializeUpload` and the
//! parts), posts with one or several images, and deletion, in the versioned REST API's shapes.

use super::*;

pub(super) fn linkedin_error(status: u16, code: &str, message: &str) -> Response {
    answer(
        status,
        json!({"status": status, "code": code, "message": message}),
        None,
    )
}

/// Checks LinkedIn's versioned-API headers and the token.
pub(super) fn linkedin_headers_ok(inner: &Inner, headers: &HeaderMap) -> Result<(), Box<Response>> {
    if !bearer(headers).is_some_and(|t| inner.state().access_tokens.contains(&t)) {
        return Err(Box::new(linkedin_error(
            401,
            "REVOKED_ACCESS_TOKEN",
            "The token used in the request has been revoked by the user",
        )));
    }
    let version = headers
        .get("linkedin-version")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    let restli = headers
        .get("x-restli-protocol-version")
        .and_then(|v| v.to_str().ok());
    if version.len() != 6 || !version.bytes().all(|b| b.is_ascii_digit()) || restli != Some("2.0.0")
    {
        return Err(Box::new(linkedin_error(
            400,
            "VERSION_MISSING",
            "LinkedIn-Version (YYYYMM) and X-Restli-Protocol-Version: 2.0.0 are required",
        )));
    }
    Ok(())
}

pub(super) fn linkedin_media(
    inner: &Inner,
    method: &Method,
    path: &str,
    query: &HashMap<String, String>,
    headers: &HeaderMap,
    text: &str,
) -> Response {
    if let Err(refused) = linkedin_headers_ok(inner, headers) {
        return *refused;
    }
    let video = path.starts_with("/linkedin/rest/videos");
    let mut state = inner.state();
    if method == Method::GET {
        let encoded = path.rsplit('/').next().unwrap_or("");
        let urn: String = url::form_urlencoded::parse(format!("u={encoded}").as_bytes())
            .next()
            .map(|(_, v)| v.into_owned())
            .unwrap_or_default();
        let Some(media) = state.linkedin_media.get_mut(&urn) else {
            return linkedin_error(404, "NOT_FOUND", "no such media");
        };
        let uploaded = media.parts.iter().all(|(_, _, got)| *got);
        media.reads += 1;
        let status = match (uploaded, media.finalized || !video, media.reads) {
            (false, _, _) | (_, false, _) => "WAITING_UPLOAD",
            (true, true, 1) => "PROCESSING",
            _ => "AVAILABLE",
        };
        return answer(200, json!({"id": urn, "status": status}), None);
    }
    let body: Value = serde_json::from_str(text).unwrap_or(Value::Null);
    match query.get("action").map(String::as_str) {
        Some("initializeUpload") => {
            let request = &body["initializeUploadRequest"];
            let owner = request["owner"].as_str().unwrap_or("");
            if !owner.starts_with("urn:li:person:") && !owner.starts_with("urn:li:organization:") {
                return linkedin_error(
                    422,
                    "INVALID_OWNER",
                    "owner must be a person or organization URN",
                );
            }
            state.next_id += 1;
            let n = state.next_id;
            if video {
                let Some(size) = request["fileSizeBytes"].as_u64().filter(|s| *s > 0) else {
                    return linkedin_error(422, "INVALID_SIZE", "fileSizeBytes is required");
                };
                let urn = format!("urn:li:video:C5F10AQ{n}");
                let mut parts = Vec::new();
                let mut first = 0;
                while first < size {
                    let last = (first + LINKEDIN_PART).min(size) - 1;
                    parts.push((first, last, false));
                    first = last + 1;
                }
                let instructions: Vec<Value> = parts
                    .iter()
                    .enumerate()
                    .map(|(i, (a, b, _))| json!({"uploadUrl": format!("{}/linkedin/upload/{n}/{i}", inner.base_url), "firstByte": a, "lastByte": b}))
                    .collect();
                state.linkedin_media.insert(
                    urn.clone(),
                    LinkedinMedia {
                        parts,
                        finalized: false,
                        reads: 0,
                        owner: owner.to_owned(),
                        received: 0,
                    },
                );
                answer(
                    200,
                    json!({"value": {"uploadUrlsExpireAt": 1_800_000_000_000u64, "video": urn,
                    "uploadInstructions": instructions, "uploadToken": ""}}),
                    None,
                )
            } else {
                let urn = format!("urn:li:image:C4E10AQ{n}");
                state.linkedin_media.insert(
                    urn.clone(),
                    LinkedinMedia {
                        parts: vec![(0, u64::MAX, false)],
                        finalized: true,
                        reads: 0,
                        owner: owner.to_owned(),
                        received: 0,
                    },
                );
                answer(
                    200,
                    json!({"value": {"uploadUrlExpiresAt": 1_800_000_000_000u64,
                    "uploadUrl": format!("{}/linkedin/upload/{n}/0", inner.base_url), "image": urn}}),
                    None,
                )
            }
        }
        Some("finalizeUpload") if video => {
            let request = &body["finalizeUploadRequest"];
            let urn = request["video"].as_str().unwrap_or("");
            let Some(media) = state.linkedin_media.get_mut(urn) else {
                return linkedin_error(404, "NOT_FOUND", "no such video");
            };
            let etags: Vec<String> = (0..media.parts.len())
                .map(|i| format!("etag-{i}"))
                .collect();
            let sent: Vec<&str> = request["uploadedPartIds"]
                .as_array()
                .map(|a| a.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            if !media.parts.iter().all(|(_, _, got)| *got) || sent != etags {
                return linkedin_error(
                    400,
                    "PARTS_MISMATCH",
                    "uploadedPartIds must be every part's ETag, in order",
                );
            }
            media.finalized = true;
            answer(200, json!({}), None)
        }
        _ => linkedin_error(400, "BAD_ACTION", "unknown action"),
    }
}

pub(super) fn linkedin_part(
    inner: &Inner,
    path: &str,
    headers: &HeaderMap,
    body: &[u8],
) -> Response {
    if !bearer(headers).is_some_and(|t| inner.state().access_tokens.contains(&t)) {
        return linkedin_error(401, "REVOKED_ACCESS_TOKEN", "revoked");
    }
    let segments: Vec<&str> = path
        .trim_start_matches("/linkedin/upload/")
        .split('/')
        .collect();
    let (Some(n), Some(index)) = (
        segments.first(),
        segments.get(1).and_then(|i| i.parse::<usize>().ok()),
    ) else {
        return linkedin_error(404, "NOT_FOUND", "no such upload");
    };
    let mut state = inner.state();
    let Some((_, media)) = state
        .linkedin_media
        .iter_mut()
        .find(|(urn, _)| urn.ends_with(&format!("AQ{n}")))
    else {
        return linkedin_error(404, "NOT_FOUND", "no such upload");
    };
    let Some(part) = media.parts.get_mut(index) else {
        return linkedin_error(404, "NOT_FOUND", "no such part");
    };
    let image = part.1 == u64::MAX;
    if !image && body.len() as u64 != part.1 - part.0 + 1 {
        return linkedin_error(
            400,
            "PART_SIZE",
            "the part is not the bytes the instruction names",
        );
    }
    let again = part.2;
    part.2 = true;
    if image {
        media.received = body.len();
    } else if !again {
        media.received += body.len();
    }
    let mut response = (StatusCode::OK, "").into_response();
    response.headers_mut().insert(
        header::ETAG,
        format!("etag-{index}").parse().expect("a header value"),
    );
    response
}

pub(super) fn linkedin_post(
    inner: &Inner,
    method: &Method,
    headers: &HeaderMap,
    query: &HashMap<String, String>,
    text: &str,
) -> Response {
    if let Err(refused) = linkedin_headers_ok(inner, headers) {
        return *refused;
    }
    let mut state = inner.state();
    if method == Method::GET {
        let author = query.get("author").cloned().unwrap_or_default();
        if query.get("q").map(String::as_str) != Some("author") {
            return linkedin_error(400, "BAD_QUERY", "q=author is required");
        }
        let elements: Vec<Value> = state
            .linkedin_posts
            .iter()
            .rev()
            .filter(|(_, a, _, _)| *a == author)
            .map(|(urn, _, media, _)| {
                let content = match state.linkedin_images.get(urn) {
                    Some(images) => json!({"multiImage": {"images": images}}),
                    None => json!({"media": {"id": media}}),
                };
                json!({"id": urn, "author": author, "content": content})
            })
            .collect();
        return answer(200, json!({"elements": elements}), None);
    }
    let body: Value = serde_json::from_str(text).unwrap_or(Value::Null);
    let content = &body["content"];
    let author = body["author"].as_str().unwrap_or("").to_owned();
    if !author.starts_with("urn:li:")
        || body["visibility"] != "PUBLIC"
        || body["distribution"]["feedDistribution"] != "MAIN_FEED"
        || body["lifecycleState"] != "PUBLISHED"
        || body["commentary"]
            .as_str()
            .is_none_or(|c| c.chars().count() > 3000)
    {
        return linkedin_error(
            422,
            "INVALID_POST",
            "author, commentary, visibility, distribution and lifecycleState are required",
        );
    }
    let multi = content.get("multiImage").is_some();
    let (media, sizes) = if multi {
        if content.get("media").is_some() {
            return linkedin_error(
                400,
                "INVALID_CONTENT",
                "content is media or multiImage, not both",
            );
        }
        let images = &content["multiImage"]["images"];
        let sizes = match linkedin_multi_image(&state, &author, images) {
            Ok(sizes) => sizes,
            Err(refused) => return *refused,
        };
        let first = images[0]["id"].as_str().unwrap_or("").to_owned();
        (first, sizes)
    } else {
        let media = content["media"]["id"].as_str().unwrap_or("").to_owned();
        let available = state
            .linkedin_media
            .get(&media)
            .is_some_and(|m| m.finalized && m.parts.iter().all(|(_, _, got)| *got));
        if !available {
            return linkedin_error(422, "MEDIA_NOT_READY", "the media is not available");
        }
        (media, Vec::new())
    };
    state.next_id += 1;
    let urn = format!("urn:li:share:70{:016}", state.next_id);
    let shown = little_shown(body["commentary"].as_str().unwrap_or(""));
    state
        .linkedin_posts
        .push((urn.clone(), author, media, shown));
    if multi {
        state
            .linkedin_images
            .insert(urn.clone(), content["multiImage"]["images"].clone());
        state.carousels.push(("linkedin", urn.clone(), sizes));
    }
    let mut response = (StatusCode::CREATED, "").into_response();
    response
        .headers_mut()
        .insert("x-restli-id", urn.parse().expect("a header value"));
    response
}

/// Checks a post's `content.multiImage.images` (the MultiImage API): 2 to 20 `{"id",
/// "altText"?}`, each an image URN initialized for `author` whose bytes were uploaded; the
/// images' uploaded sizes, in order.
pub(super) fn linkedin_multi_image(
    state: &StandInState,
    author: &str,
    images: &Value,
) -> Result<Vec<usize>, Box<Response>> {
    let Some(images) = images.as_array().filter(|i| (2..=20).contains(&i.len())) else {
        return Err(Box::new(linkedin_error(
            400,
            "INVALID_MULTI_IMAGE",
            "content.multiImage.images must hold 2 to 20 images",
        )));
    };
    let mut sizes = Vec::new();
    for (n, image) in images.iter().enumerate() {
        let alt_ok = image.get("altText").is_none_or(Value::is_string);
        let Some(urn) = image["id"].as_str().filter(|_| image.is_object() && alt_ok) else {
            return Err(Box::new(linkedin_error(
                400,
                "INVALID_MULTI_IMAGE",
                "each image is {\"id\": an image URN, \"altText\"?: text}",
            )));
        };
        let issued = state
            .linkedin_media
            .get(urn)
            .filter(|_| urn.starts_with("urn:li:image:"));
        let Some(media) = issued else {
            return Err(Box::new(linkedin_error(
                400,
                "INVALID_MEDIA",
                &format!("{urn} is not an image initialized here"),
            )));
        };
        if images[..n].iter().any(|other| other["id"] == urn) {
            return Err(Box::new(linkedin_error(
                400,
                "INVALID_MULTI_IMAGE",
                &format!("{urn} is in the post twice"),
            )));
        }
        if media.owner != author {
            return Err(Box::new(linkedin_error(
                422,
                "MEDIA_OWNER_MISMATCH",
                &format!("{urn} does not belong to the post's author"),
            )));
        }
        if !(media.finalized && media.parts.iter().all(|(_, _, got)| *got)) {
            return Err(Box::new(linkedin_error(
                422,
                "MEDIA_NOT_READY",
                &format!("{urn} is not uploaded"),
            )));
        }
        sizes.push(media.received);
    }
    Ok(sizes)
}

/// Commentary as LinkedIn shows it, read in its "little" text format (Microsoft's "little text
/// format" page): a backslash makes the next character plain text; `#` before a letter starts
/// a hashtag; any other unescaped reserved character (`| { } @ [ ] ( ) < > # * _ ~ \`) ends
/// the text there, as LinkedIn silently cuts a post at it.
pub(super) fn little_shown(little: &str) -> String {
    const RESERVED: &str = "|{}@[]()<>#*_~\\";
    let mut shown = String::new();
    let mut chars = little.chars().peekable();
    let mut previous: Option<char> = None;
    while let Some(c) = chars.next() {
        if c == '\\' {
            match chars.next() {
                Some(next) => {
                    shown.push(next);
                    previous = Some(next);
                    continue;
                }
                None => break,
            }
        }
        let hashtag = c == '#'
            && !previous.is_some_and(char::is_alphanumeric)
            && chars.peek().is_some_and(|next| next.is_alphabetic());
        if RESERVED.contains(c) && !hashtag {
            break;
        }
        shown.push(c);
        previous = Some(c);
    }
    shown
}

/// A percent-encoded path segment (a URN), decoded.
pub(super) fn decoded_segment(encoded: &str) -> String {
    url::form_urlencoded::parse(format!("u={encoded}").as_bytes())
        .map(|(_, v)| v.into_owned())
        .next()
        .unwrap_or_default()
}

/// Post deletion as LinkedIn's Posts API documents it: `DELETE /rest/posts/{encoded URN}`
/// with `X-RestLi-Method: DELETE` and the versioned headers, `204`, a post deleted already
/// answered `204` as well.
pub(super) fn linkedin_delete(
    inner: &Inner,
    path: &str,
    headers: &HeaderMap,
    body: &[u8],
) -> Response {
    if let Err(refused) = linkedin_headers_ok(inner, headers) {
        return *refused;
    }
    let method_header = headers.get("x-restli-method").and_then(|v| v.to_str().ok());
    if method_header != Some("DELETE") || !body.is_empty() {
        return linkedin_error(
            400,
            "BAD_REQUEST",
            "a delete needs X-RestLi-Method: DELETE and no body",
        );
    }
    let encoded = path.trim_start_matches("/linkedin/rest/posts/");
    if encoded.contains(':') {
        return linkedin_error(
            400,
            "BAD_REQUEST",
            "the URN must be URL-encoded in the path",
        );
    }
    let urn = decoded_segment(encoded);
    let mut state = inner.state();
    if !state.linkedin_posts.iter().any(|(u, _, _, _)| *u == urn) {
        return linkedin_error(404, "NOT_FOUND", "no such post");
    }
    if !state
        .deleted
        .iter()
        .any(|(p, d)| *p == "linkedin" && *d == urn)
    {
        state.deleted.push(("linkedin", urn));
    }
    StatusCode::NO_CONTENT.into_response()
}
