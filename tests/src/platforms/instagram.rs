//! Instagram's endpoints of the stand-in: the Graph API's media containers (reels, images and
//! carousels, their media fetched from the URLs given), their status, publishing, permalinks
//! and the login's token and pages.

use super::*;

pub(super) async fn instagram_container(inner: &Inner, path: &str, text: &str) -> Response {
    let account = path
        .trim_start_matches("/graph/v21.0/")
        .trim_end_matches("/media")
        .to_owned();
    let fields = form(text);
    if !fields
        .get("access_token")
        .is_some_and(|t| inner.state().access_tokens.contains(t))
    {
        return graph_error(
            400,
            190,
            "Error validating access token: Session has expired",
        );
    }
    let item = match fields.get("is_carousel_item").map(String::as_str) {
        None | Some("false") => false,
        Some("true") => true,
        Some(_) => return graph_error(400, 100, "(#100) is_carousel_item must be true or false"),
    };
    if fields.get("media_type").map(String::as_str) == Some("CAROUSEL") {
        if item {
            return graph_error(400, 100, "(#100) a carousel is not a carousel item");
        }
        return instagram_carousel(inner, account, &fields);
    }
    let (url, video) = match (
        fields.get("media_type").map(String::as_str),
        fields.get("video_url"),
        fields.get("image_url"),
    ) {
        (Some("REELS"), Some(url), None) => (url.clone(), true),
        (None, None, Some(url)) => (url.clone(), false),
        _ => {
            return graph_error(
                400,
                100,
                "(#100) media_type=REELS with video_url, or image_url",
            )
        }
    };
    if item && video {
        return graph_error(
            400,
            100,
            "(#100) a carousel item is an image_url here (Reels are not carousel items)",
        );
    }
    if item && fields.contains_key("caption") {
        return graph_error(
            400,
            100,
            "(#100) a carousel item takes no caption: its carousel container has it",
        );
    }
    if let Some(refused) = caption_refused(&fields) {
        return refused;
    }
    // `thumb_offset`: for videos and Reels, the cover frame's position in milliseconds.
    if let Some(offset) = fields.get("thumb_offset") {
        if !video || offset.parse::<u64>().is_err() {
            return graph_error(
                400,
                100,
                "(#100) thumb_offset must be a whole number of milliseconds, for a video",
            );
        }
    }
    let fetched = fetch_media(&inner.client, &url, video).await;
    let mut state = inner.state();
    let id = add_container(
        &mut state,
        Container {
            account,
            caption: fields.get("caption").cloned(),
            fetched,
            reads: 0,
            media_id: None,
            carousel_item: item,
            children: Vec::new(),
        },
    );
    answer(200, json!({"id": id}), None)
}

/// Stores a new container under a fresh id; the id.
pub(super) fn add_container(state: &mut StandInState, container: Container) -> String {
    state.next_id += 1;
    let id = format!("1790{:08}", state.next_id);
    state.containers.insert(id.clone(), container);
    id
}

/// Instagram's caption limit: 2,200 characters.
pub(super) fn caption_refused(fields: &HashMap<String, String>) -> Option<Response> {
    fields
        .get("caption")
        .is_some_and(|c| c.chars().count() > 2200)
        .then(|| graph_error(400, 100, "(#100) The caption is too long"))
}

/// A carousel container (`media_type=CAROUSEL`): `children`, 2 to 10 comma-separated
/// carousel item containers of `account` that no other carousel holds, and an optional
/// `caption`; no media URL of its own. Its status is `ERROR` when an item could not be
/// fetched.
pub(super) fn instagram_carousel(
    inner: &Inner,
    account: String,
    fields: &HashMap<String, String>,
) -> Response {
    if ["image_url", "video_url", "thumb_offset"]
        .into_iter()
        .any(|name| fields.contains_key(name))
    {
        return graph_error(
            400,
            100,
            "(#100) a carousel container takes children, not image_url, video_url or thumb_offset",
        );
    }
    if let Some(refused) = caption_refused(fields) {
        return refused;
    }
    let children: Vec<String> = fields
        .get("children")
        .map(|c| c.split(',').map(str::to_owned).collect())
        .unwrap_or_default();
    if !(2..=10).contains(&children.len()) {
        return graph_error(
            400,
            100,
            "(#100) children must name 2 to 10 carousel item containers",
        );
    }
    let mut state = inner.state();
    let mut fetched: Result<usize, String> = Ok(0);
    for (n, child) in children.iter().enumerate() {
        let Some(container) = state
            .containers
            .get(child)
            .filter(|c| c.account == account && c.carousel_item)
        else {
            return graph_error(
                400,
                100,
                &format!("(#100) {child} is not a carousel item container of this user"),
            );
        };
        let taken = children[..n].contains(child)
            || state
                .containers
                .values()
                .any(|c| c.children.contains(child));
        if taken {
            return graph_error(
                400,
                100,
                &format!("(#100) {child} is already an item of a carousel"),
            );
        }
        fetched = match (fetched, &container.fetched) {
            (Ok(total), Ok(size)) => Ok(total + size),
            (Ok(_), Err(why)) => Err(format!("carousel item {child}: {why}")),
            (Err(why), _) => Err(why),
        };
    }
    let id = add_container(
        &mut state,
        Container {
            account,
            caption: fields.get("caption").cloned(),
            fetched,
            reads: 0,
            media_id: None,
            carousel_item: false,
            children,
        },
    );
    answer(200, json!({"id": id}), None)
}

/// Fetches a media URL as Instagram does: a first `Range` request, then the whole.
pub(super) async fn fetch_media(
    client: &reqwest::Client,
    url: &str,
    video: bool,
) -> Result<usize, String> {
    let head = client
        .get(url)
        .header("range", "bytes=0-1023")
        .send()
        .await
        .map_err(|e| e.to_string())?;
    if head.status().as_u16() != 206 {
        return Err(format!("the range request answered {}", head.status()));
    }
    let first = head.bytes().await.map_err(|e| e.to_string())?;
    let looks_right = if video {
        first.len() >= 8 && &first[4..8] == b"ftyp"
    } else {
        ImageFormat::of(&first) == Some(ImageFormat::Jpeg)
    };
    if !looks_right || first.len() > 1024 {
        return Err("the first kilobyte is not the media".into());
    }
    let whole = client.get(url).send().await.map_err(|e| e.to_string())?;
    if !whole.status().is_success() {
        return Err(format!("the download answered {}", whole.status()));
    }
    let bytes = whole.bytes().await.map_err(|e| e.to_string())?;
    if !bytes.starts_with(&first) {
        return Err("the download differs from its first range".into());
    }
    Ok(bytes.len())
}

pub(super) fn instagram_get(
    inner: &Inner,
    path: &str,
    query: &HashMap<String, String>,
) -> Response {
    let mut state = inner.state();
    if !query
        .get("access_token")
        .is_some_and(|t| state.access_tokens.contains(t))
    {
        return graph_error(
            400,
            190,
            "Error validating access token: Session has expired",
        );
    }
    let rest = path.trim_start_matches("/graph/v21.0/");
    if let Some(account) = rest.strip_suffix("/media") {
        let data: Vec<Value> = state
            .media
            .iter()
            .rev()
            .filter(|(_, owner, _)| owner == account)
            .map(|(id, _, caption)| {
                json!({"id": id, "caption": caption,
                       "permalink": format!("https://www.instagram.com/reel/{id}/"),
                       "timestamp": "2026-11-16T10:20:30+0000"})
            })
            .collect();
        return answer(200, json!({"data": data}), None);
    }
    if let Some(container) = state.containers.get_mut(rest) {
        container.reads += 1;
        let status = match (&container.fetched, &container.media_id, container.reads) {
            (Err(_), _, _) => "ERROR",
            (_, Some(_), _) => "PUBLISHED",
            (_, None, reads) if reads <= 2 => "IN_PROGRESS",
            _ => "FINISHED",
        };
        return answer(
            200,
            json!({"status_code": status, "status": status, "id": rest}),
            None,
        );
    }
    if state.media.iter().any(|(id, _, _)| id == rest) {
        return answer(
            200,
            json!({"permalink": format!("https://www.instagram.com/reel/{rest}/"), "id": rest}),
            None,
        );
    }
    graph_error(400, 100, "(#100) Unsupported get request")
}

pub(super) fn instagram_publish(inner: &Inner, path: &str, text: &str) -> Response {
    let account = path
        .trim_start_matches("/graph/v21.0/")
        .trim_end_matches("/media_publish")
        .to_owned();
    let fields = form(text);
    let mut state = inner.state();
    if !fields
        .get("access_token")
        .is_some_and(|t| state.access_tokens.contains(t))
    {
        return graph_error(
            400,
            190,
            "Error validating access token: Session has expired",
        );
    }
    let next = state.next_id + 1;
    let Some(container) = fields
        .get("creation_id")
        .and_then(|id| state.containers.get_mut(id))
        .filter(|c| c.account == account)
    else {
        return graph_error(
            400,
            100,
            "(#100) creation_id is not a container of this user",
        );
    };
    if container.carousel_item {
        return graph_error(
            400,
            100,
            "(#100) a carousel item is published through its carousel",
        );
    }
    if container.media_id.is_some() || container.fetched.is_err() || container.reads <= 2 {
        return graph_error(400, 9007, "(#9007) The media is not ready for publishing");
    }
    let id = format!("1800{next:08}");
    container.media_id = Some(id.clone());
    let caption = container.caption.clone();
    let children = container.children.clone();
    state.next_id = next;
    state.media.push((id.clone(), account, caption));
    if children.len() >= 2 {
        let sizes: Vec<usize> = children
            .iter()
            .map(|child| {
                state
                    .containers
                    .get(child)
                    .and_then(|c| c.fetched.as_ref().ok().copied())
                    .unwrap_or(0)
            })
            .collect();
        state.carousels.push(("instagram", id.clone(), sizes));
    }
    answer(200, json!({"id": id}), None)
}

/// Meta's token endpoint: `GET` with the app's id and secret in the query, and either the
/// code (with its `redirect_uri`), answering a short-lived user token, or
/// `grant_type=fb_exchange_token` with one, answering the long-lived token.
pub(super) fn instagram_token(inner: &Inner, query: &HashMap<String, String>) -> Response {
    let field = |name: &str| query.get(name).map(String::as_str);
    if field("client_id") != Some(INSTAGRAM_APP_ID)
        || field("client_secret") != Some(INSTAGRAM_APP_SECRET)
    {
        return answer(
            400,
            json!({"error": {"message": "Error validating client secret.", "type": "OAuthException", "code": 1}}),
            None,
        );
    }
    let mut state = inner.state();
    if field("grant_type") == Some("fb_exchange_token") {
        let long = field("fb_exchange_token").and_then(|short| state.short_tokens.remove(short));
        return match long {
            Some(long) => {
                state.access_tokens.insert(long.clone());
                answer(
                    200,
                    json!({"access_token": long, "token_type": "bearer", "expires_in": 5_183_944}),
                    None,
                )
            }
            None => answer(
                400,
                json!({"error": {"message": "Invalid OAuth access token.", "type": "OAuthException", "code": 190}}),
                None,
            ),
        };
    }
    let fields: std::collections::BTreeMap<String, String> =
        query.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
    match inner.auth["instagram"].redeem(&fields, INSTAGRAM_APP_ID) {
        Ok(long) => {
            let short = format!("short.{long}");
            state.short_tokens.insert(short.clone(), long);
            answer(
                200,
                json!({"access_token": short, "token_type": "bearer", "expires_in": 5183}),
                None,
            )
        }
        Err((_, description)) => answer(
            400,
            json!({"error": {"message": description, "type": "OAuthException", "code": 100}}),
            None,
        ),
    }
}

/// `me/accounts` with a long-lived user token: a Page per Instagram account the consent
/// reached, each with its token and its `instagram_business_account`.
pub(super) fn instagram_pages(inner: &Inner, query: &HashMap<String, String>) -> Response {
    let mut state = inner.state();
    let token = query.get("access_token").cloned().unwrap_or_default();
    let Some((_, accounts)) = state.consenting.get(&token).cloned() else {
        return answer(
            400,
            json!({"error": {"message": "Invalid OAuth access token.", "type": "OAuthException", "code": 190}}),
            None,
        );
    };
    let fields = query.get("fields").cloned().unwrap_or_default();
    if !fields.contains("instagram_business_account") || !fields.contains("access_token") {
        return answer(
            400,
            json!({"error": {"message": "fields must ask for the Page's token and account", "type": "OAuthException", "code": 100}}),
            None,
        );
    }
    let mut data = Vec::new();
    for (id, username) in accounts {
        let page_token = format!("page.{id}");
        state.access_tokens.insert(page_token.clone());
        data.push(
            json!({"id": format!("pg{id}"), "name": format!("{username} Page"),
            "access_token": page_token,
            "instagram_business_account": {"id": id, "username": username}}),
        );
    }
    answer(
        200,
        json!({"data": data, "paging": {"cursors": {"before": "b", "after": "a"}}}),
        None,
    )
}
