//! Media items and connected channels.

use std::collections::BTreeMap;
use std::sync::Arc;

use super::{minutes, seed_organization, TestStore, BASE_MONTH};
use crate::ids::{ChannelId, MediaId, OrganizationId};
use crate::media::inspect::{ImageFacts, ImageFormat};
use crate::media::{
    Channel, FileFacts, MediaItem, MediaKind, MediaStatus, Platform, PlatformStatus,
    PlatformTarget, StoredFile,
};
use crate::model::UsageCounters;
use crate::store::MediaFilter;
use crate::time::Timestamp;
use crate::StoreError;

/// A new media item of `organization_id`: a 1080×1080 PNG (whatever `kind` says), `pending`,
/// targeting `platforms` with one account each and a setting. Not stored.
pub fn media_item(
    organization_id: &OrganizationId,
    kind: MediaKind,
    platforms: &[Platform],
    created_at: Timestamp,
) -> MediaItem {
    let id = MediaId::new();
    let targets = platforms
        .iter()
        .map(|platform| {
            let mut settings = serde_json::Map::new();
            settings.insert("autoPublish".into(), true.into());
            let target = PlatformTarget {
                status: PlatformStatus::Idle,
                accounts: vec![format!("{}-account", platform.as_str())],
                settings,
                remote_id: None,
                url: None,
                error: None,
                posts: BTreeMap::new(),
                thumbnail: None,
            };
            (*platform, target)
        })
        .collect::<BTreeMap<_, _>>();
    MediaItem {
        file: StoredFile {
            key: format!("media/{id}"),
            name: "square.png".to_owned(),
            size: 12_345,
            facts: FileFacts::Image(ImageFacts {
                format: ImageFormat::Png,
                width: 1080,
                height: 1080,
            }),
        },
        id,
        organization_id: organization_id.clone(),
        kind,
        title: Some("Launch «ü»".to_owned()),
        description: None,
        status: MediaStatus::Pending,
        scheduled_at: Some(created_at.plus(chrono::Duration::days(1))),
        carousel: Vec::new(),
        targets,
        created_at,
        updated_at: created_at,
    }
}

/// A channel of `organization_id` on `platform` for `account_id`, connected at `at`. Not
/// stored.
pub fn channel(
    organization_id: &OrganizationId,
    platform: Platform,
    account_id: &str,
    at: Timestamp,
) -> Channel {
    Channel {
        id: ChannelId::new(),
        organization_id: organization_id.clone(),
        platform,
        account_id: account_id.to_owned(),
        name: format!("{account_id} name"),
        thumbnail: Some(format!("https://cdn.example/{account_id}.png")),
        sealed_access_token: format!("v1.access-{account_id}"),
        sealed_refresh_token: None,
        expires_at: Some(at.plus(chrono::Duration::hours(1))),
        disconnected: None,
        default_board: None,
        created_at: at,
        updated_at: at,
    }
}

/// Media items are stored whole, found by id, and listed newest first by kind, status and
/// platform, a page at a time with the total; another organization's never show.
pub async fn media_insert_get_and_list(store: Arc<dyn TestStore>) {
    let org = seed_organization(&*store, "Media").await;
    let other = seed_organization(&*store, "Media, other").await;
    let mut videos = Vec::new();
    for n in 0..7 {
        let platforms: &[Platform] = if n % 2 == 0 {
            &[Platform::Youtube, Platform::Tiktok]
        } else {
            &[Platform::Instagram]
        };
        let mut item = media_item(&org.id, MediaKind::Video, platforms, minutes(n));
        if n == 3 {
            item.status = MediaStatus::Draft;
            item.scheduled_at = None;
        }
        store.insert_media(&item, &[]).await.unwrap();
        videos.push(item);
    }
    // Two at the same time: the id decides.
    let twin = media_item(&org.id, MediaKind::Video, &[Platform::Linkedin], minutes(6));
    store.insert_media(&twin, &[]).await.unwrap();
    videos.push(twin);
    let image = media_item(
        &org.id,
        MediaKind::Image,
        &[Platform::Pinterest],
        minutes(9),
    );
    store.insert_media(&image, &[]).await.unwrap();
    let theirs = media_item(
        &other.id,
        MediaKind::Video,
        &[Platform::Youtube],
        minutes(9),
    );
    store.insert_media(&theirs, &[]).await.unwrap();
    assert!(matches!(
        store.insert_media(&image, &[]).await,
        Err(StoreError::Duplicate(_))
    ));

    assert_eq!(
        store.get_media(&image.id).await.unwrap(),
        Some(image.clone())
    );
    assert_eq!(store.get_media(&MediaId::new()).await.unwrap(), None);

    let mut newest_first = videos.clone();
    newest_first.sort_by(|a, b| (b.created_at, b.id.as_str()).cmp(&(a.created_at, a.id.as_str())));
    let all = MediaFilter {
        kind: MediaKind::Video,
        status: None,
        platform: None,
    };
    let (first, total) = store.list_media(&org.id, &all, 0, 3).await.unwrap();
    assert_eq!(total, 8);
    assert_eq!(first, newest_first[..3]);
    let (last, total) = store.list_media(&org.id, &all, 6, 3).await.unwrap();
    assert_eq!(total, 8);
    assert_eq!(last, newest_first[6..]);
    let (beyond, total) = store.list_media(&org.id, &all, 8, 3).await.unwrap();
    assert!(beyond.is_empty());
    assert_eq!(total, 8);

    let drafts = MediaFilter {
        status: Some(MediaStatus::Draft),
        ..all
    };
    let (found, total) = store.list_media(&org.id, &drafts, 0, 10).await.unwrap();
    assert_eq!((found, total), (vec![videos[3].clone()], 1));
    let tiktok = MediaFilter {
        platform: Some(Platform::Tiktok),
        ..all
    };
    let (found, total) = store.list_media(&org.id, &tiktok, 0, 10).await.unwrap();
    assert_eq!(total, 4);
    assert!(found
        .iter()
        .all(|i| i.targets.contains_key(&Platform::Tiktok)));
    let images = MediaFilter {
        kind: MediaKind::Image,
        ..all
    };
    let (found, total) = store.list_media(&org.id, &images, 0, 10).await.unwrap();
    assert_eq!((found, total), (vec![image], 1));
}

/// A channel is connected once per organization, platform and account: connecting it again
/// updates it and keeps its id and creation time. Lists are per organization, by platform
/// then oldest first.
pub async fn channel_put_reconnects_and_lists(store: Arc<dyn TestStore>) {
    let org = seed_organization(&*store, "Channels").await;
    let other = seed_organization(&*store, "Channels, other").await;
    assert_eq!(
        store
            .put_channel(&channel(
                &OrganizationId::new(),
                Platform::Tiktok,
                "t1",
                minutes(0)
            ))
            .await
            .unwrap(),
        None
    );
    let tiktok = channel(&org.id, Platform::Tiktok, "t1", minutes(1));
    assert_eq!(
        store.put_channel(&tiktok).await.unwrap(),
        Some(tiktok.clone())
    );
    let youtube = channel(&org.id, Platform::Youtube, "UC1", minutes(2));
    store.put_channel(&youtube).await.unwrap();
    let second_tiktok = channel(&org.id, Platform::Tiktok, "t2", minutes(3));
    store.put_channel(&second_tiktok).await.unwrap();
    // The same account elsewhere is another channel.
    let theirs = channel(&other.id, Platform::Tiktok, "t1", minutes(4));
    store.put_channel(&theirs).await.unwrap();

    let again = Channel {
        name: "renamed".to_owned(),
        sealed_access_token: "v1.new".to_owned(),
        sealed_refresh_token: Some("v1.refresh".to_owned()),
        updated_at: minutes(5),
        ..channel(&org.id, Platform::Tiktok, "t1", minutes(5))
    };
    let stored = store.put_channel(&again).await.unwrap().unwrap();
    assert_eq!(stored.id, tiktok.id);
    assert_eq!(stored.created_at, tiktok.created_at);
    assert_eq!(stored.name, "renamed");
    assert_eq!(stored.sealed_access_token, "v1.new");
    assert_eq!(stored.sealed_refresh_token.as_deref(), Some("v1.refresh"));
    assert_eq!(stored.updated_at, minutes(5));

    // A default board is kept when a connection names none, and replaced when it names one.
    let boarded = Channel {
        default_board: Some("board-1".to_owned()),
        updated_at: minutes(6),
        ..again.clone()
    };
    let stored = store.put_channel(&boarded).await.unwrap().unwrap();
    assert_eq!(stored.default_board.as_deref(), Some("board-1"));
    let stored = store
        .put_channel(&Channel {
            updated_at: minutes(7),
            ..again.clone()
        })
        .await
        .unwrap()
        .unwrap();
    assert_eq!(stored.default_board.as_deref(), Some("board-1"), "kept");
    // Only a Pinterest channel's default board is set on its own.
    for missing in [stored.id.clone(), ChannelId::new()] {
        assert_eq!(
            store
                .set_channel_default_board(&missing, Some("board-2"), minutes(8))
                .await
                .unwrap(),
            None,
            "not a Pinterest channel"
        );
    }
    let pins = channel(&other.id, Platform::Pinterest, "p1", minutes(8));
    store.put_channel(&pins).await.unwrap();
    let set = store
        .set_channel_default_board(&pins.id, Some("board-2"), minutes(9))
        .await
        .unwrap()
        .expect("the Pinterest channel");
    assert_eq!(set.default_board.as_deref(), Some("board-2"));
    assert_eq!(set.updated_at, minutes(9));
    let cleared = store
        .set_channel_default_board(&pins.id, None, minutes(10))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(cleared.default_board, None);

    assert_eq!(
        store.list_channels(&org.id).await.unwrap(),
        vec![youtube, stored, second_tiktok]
    );
    assert_eq!(
        store.list_channels(&other.id).await.unwrap(),
        vec![theirs, cleared]
    );
}

/// A resumable upload of `length` bytes of `organization_id`, created at `at`, expiring a
/// day later, with a file name in its metadata. Not stored.
pub fn upload(
    organization_id: &OrganizationId,
    length: u64,
    at: Timestamp,
) -> crate::media::Upload {
    crate::media::Upload {
        id: crate::ids::UploadId::new(),
        organization_id: organization_id.clone(),
        length,
        offset: 0,
        metadata: vec![
            ("filename".to_owned(), "Y2xpcC5tcDQ=".to_owned()),
            ("is_confidential".to_owned(), String::new()),
        ],
        parts: Vec::new(),
        created_at: at,
        expires_at: at.plus(chrono::Duration::hours(24)),
    }
}

/// `blob_keys_in_use` names the blobs of items' files (a carousel's images and YouTube
/// thumbnails too) and uploads' parts among those asked about, whichever organization they
/// belong to, and forgets an upload's parts once it is removed. A carousel comes back whole.
pub async fn blob_keys_in_use_names_files_and_parts(store: Arc<dyn TestStore>) {
    use crate::media::UploadPart;
    let org = seed_organization(&*store, "Blobs").await;
    let other = seed_organization(&*store, "Blobs, other").await;
    let mut item = media_item(&org.id, MediaKind::Video, &[Platform::Youtube], minutes(0));
    // A video's custom YouTube thumbnail is a blob of its own.
    let thumbnail = StoredFile {
        key: format!("media/{}/thumbnail.jpg", org.id),
        ..item.file.clone()
    };
    if let Some(youtube) = item.targets.get_mut(&Platform::Youtube) {
        youtube.thumbnail = Some(thumbnail.clone());
    }
    let mut theirs = media_item(
        &other.id,
        MediaKind::Image,
        &[Platform::Pinterest],
        minutes(1),
    );
    // A carousel: its other images are blobs of their own, in order.
    theirs.carousel = (2..=3)
        .map(|n| StoredFile {
            key: format!("media/{}/image-{n}.png", other.id),
            name: format!("image-{n}.png"),
            ..theirs.file.clone()
        })
        .collect();
    store.insert_media(&item, &[]).await.unwrap();
    store.insert_media(&theirs, &[]).await.unwrap();
    assert_eq!(
        store.get_media(&theirs.id).await.unwrap().as_ref(),
        Some(&theirs)
    );
    let created = upload(&org.id, 10, minutes(0));
    store.insert_upload(&created).await.unwrap();
    let part = UploadPart {
        offset: 0,
        length: 4,
        key: format!("uploads/{}/{}/a", org.id, created.id),
    };
    store
        .append_upload_part(&created.id, &part, minutes(1))
        .await
        .unwrap();
    let asked = vec![
        item.file.key.clone(),
        thumbnail.key.clone(),
        theirs.file.key.clone(),
        part.key.clone(),
        "media/nobody".to_owned(),
        theirs.carousel[1].key.clone(),
        format!("uploads/{}/{}/b", org.id, created.id),
    ];
    let in_use = store.blob_keys_in_use(&asked).await.unwrap();
    let expected: std::collections::HashSet<String> = [
        &item.file.key,
        &thumbnail.key,
        &theirs.file.key,
        &theirs.carousel[1].key,
        &part.key,
    ]
    .into_iter()
    .cloned()
    .collect();
    assert_eq!(in_use, expected);
    assert!(store.blob_keys_in_use(&[]).await.unwrap().is_empty());
    store.delete_upload(&created.id).await.unwrap();
    let in_use = store.blob_keys_in_use(&asked).await.unwrap();
    assert!(!in_use.contains(&part.key) && in_use.contains(&item.file.key));
}

/// An upload's offset moves by one part at a time, only from the part's own offset (of
/// concurrent requests at one offset, one wins); it is gone once expired, purged by
/// `take_expired_uploads`, and removed by `delete_upload`.
pub async fn upload_parts_append_once_per_offset(store: Arc<dyn TestStore>) {
    use crate::media::UploadPart;
    use crate::store::Appended;
    let org = seed_organization(&*store, "Uploads").await;
    let created = upload(&org.id, 10, minutes(0));
    store.insert_upload(&created).await.unwrap();
    assert!(matches!(
        store.insert_upload(&created).await,
        Err(StoreError::Duplicate(_))
    ));
    assert_eq!(
        store.get_upload(&created.id, minutes(1)).await.unwrap(),
        Some(created.clone())
    );
    assert_eq!(
        created.metadata_value("filename").as_deref(),
        Some("clip.mp4")
    );
    let part = |offset: u64, length: u64, tag: &str| UploadPart {
        offset,
        length,
        key: format!("uploads/{}/{tag}", created.id),
    };
    let first = part(0, 4, "a");
    let Appended::Added(after) = store
        .append_upload_part(&created.id, &first, minutes(1))
        .await
        .unwrap()
    else {
        panic!("the first part is added");
    };
    assert_eq!(
        (after.offset, after.parts.clone()),
        (4, vec![first.clone()])
    );
    assert_eq!(
        store
            .append_upload_part(&created.id, &part(0, 4, "again"), minutes(1))
            .await
            .unwrap(),
        Appended::OffsetMoved(4)
    );

    let contenders: Vec<_> = (0..8)
        .map(|n| {
            let (store, id, part) = (
                store.clone(),
                created.id.clone(),
                part(4, 6, &format!("c{n}")),
            );
            tokio::spawn(async move {
                store
                    .append_upload_part(&id, &part, minutes(2))
                    .await
                    .unwrap()
            })
        })
        .collect();
    let mut added = 0;
    for contender in contenders {
        match contender.await.unwrap() {
            Appended::Added(upload) => {
                added += 1;
                assert!(upload.is_complete());
                assert_eq!(upload.parts.len(), 2);
            }
            Appended::OffsetMoved(offset) => assert_eq!(offset, 10),
            Appended::Missing => panic!("the upload went missing"),
        }
    }
    assert_eq!(added, 1);

    // Expired: invisible, refused, then purged.
    let expiry = created.expires_at;
    assert_eq!(store.get_upload(&created.id, expiry).await.unwrap(), None);
    assert_eq!(
        store
            .append_upload_part(&created.id, &part(10, 0, "late"), expiry)
            .await
            .unwrap(),
        Appended::Missing
    );
    let fresh = upload(&org.id, 3, minutes(60));
    store.insert_upload(&fresh).await.unwrap();
    let purged = store.take_expired_uploads(expiry, 1_000).await.unwrap();
    let purged_ids: Vec<_> = purged.iter().map(|u| u.id.clone()).collect();
    assert!(purged_ids.contains(&created.id));
    assert!(!purged_ids.contains(&fresh.id));
    assert_eq!(store.delete_upload(&created.id).await.unwrap(), None);
    assert_eq!(
        store.delete_upload(&fresh.id).await.unwrap(),
        Some(fresh.clone())
    );
    assert_eq!(
        store.get_upload(&fresh.id, minutes(61)).await.unwrap(),
        None
    );
}

/// A media item comes with the jobs that publish its posts, all or nothing: with a job id
/// already taken, neither the item nor its other jobs are stored. `update_post` replaces one
/// post and derives the platform's and the item's statuses; an unknown item, platform or
/// account changes nothing. The month's meters count the stored item (one upload, its bytes)
/// and a post once, when it reaches `published`.
pub async fn media_insert_with_jobs_and_update_posts(store: Arc<dyn TestStore>) {
    use crate::media::publish::MEDIA_PUBLISH;
    use crate::media::Post;
    use crate::model::{JobRecord, JobStatus};
    let org = seed_organization(&*store, "Publishing").await;
    let mut item = media_item(
        &org.id,
        MediaKind::Video,
        &[Platform::Youtube, Platform::Tiktok],
        minutes(1),
    );
    let job = |at| {
        JobRecord::new(
            org.id.clone(),
            MEDIA_PUBLISH,
            serde_json::json!({}),
            None,
            at,
        )
    };
    let jobs = vec![job(minutes(1)), job(minutes(1))];
    for (target, job) in item.targets.values_mut().zip(&jobs) {
        let account = target.accounts[0].clone();
        let mut post = Post::new(PlatformStatus::Pending);
        post.job_id = Some(job.id.clone());
        target.posts.insert(account, post);
    }
    item.scheduled_at = None;
    item.settle(minutes(1));
    assert_eq!(item.status, MediaStatus::Pending);

    // A taken job id: nothing is stored.
    let taken = job(minutes(0));
    store
        .insert_jobs(std::slice::from_ref(&taken))
        .await
        .unwrap();
    let clash = MediaItem {
        id: MediaId::new(),
        ..item.clone()
    };
    assert!(store
        .insert_media(&clash, &[jobs[0].clone(), taken.clone()])
        .await
        .is_err());
    assert_eq!(store.get_media(&clash.id).await.unwrap(), None);
    assert_eq!(store.get_job(&jobs[0].id).await.unwrap(), None);
    let meters = || async { store.get_usage(&org.id, BASE_MONTH).await.unwrap() };
    assert_eq!(
        meters().await,
        UsageCounters::default(),
        "nothing stored, nothing counted"
    );

    store.insert_media(&item, &jobs).await.unwrap();
    let uploaded = UsageCounters {
        media_uploads: 1,
        media_bytes: 12_345,
        ..UsageCounters::default()
    };
    assert_eq!(meters().await, uploaded);
    assert_eq!(store.get_media(&item.id).await.unwrap(), Some(item.clone()));
    for job in &jobs {
        let stored = store.get_job(&job.id).await.unwrap().expect("job stored");
        assert_eq!(stored.status, JobStatus::Pending);
        assert_eq!(stored.subject, None);
    }

    let youtube_account = item.targets[&Platform::Youtube].accounts[0].clone();
    let mut published = item
        .post(Platform::Youtube, &youtube_account)
        .unwrap()
        .clone();
    published.status = PlatformStatus::Published;
    published.remote_id = Some("vid1".into());
    published.url = Some("https://www.youtube.com/watch?v=vid1".into());
    let publish = || {
        store.update_post(
            &item.id,
            Platform::Youtube,
            &youtube_account,
            &published,
            minutes(2),
        )
    };
    let updated = publish().await.unwrap().expect("the post exists");
    assert_eq!(
        updated.targets[&Platform::Youtube].status,
        PlatformStatus::Published
    );
    assert_eq!(
        updated.targets[&Platform::Youtube].remote_id.as_deref(),
        Some("vid1")
    );
    assert_eq!(
        updated.status,
        MediaStatus::Processing,
        "TikTok is still pending"
    );
    assert_eq!(updated.updated_at, minutes(2));
    assert_eq!(
        store.get_media(&item.id).await.unwrap(),
        Some(updated.clone())
    );
    // The post counts once, however often it is written as published.
    publish().await.unwrap();
    let published_once = UsageCounters {
        posts_published: 1,
        ..uploaded
    };
    assert_eq!(meters().await, published_once);

    let tiktok_account = item.targets[&Platform::Tiktok].accounts[0].clone();
    let mut failed = item
        .post(Platform::Tiktok, &tiktok_account)
        .unwrap()
        .clone();
    failed.status = PlatformStatus::Failed;
    failed.error = Some("spam_risk_too_many_posts: too many posts".into());
    let updated = store
        .update_post(
            &item.id,
            Platform::Tiktok,
            &tiktok_account,
            &failed,
            minutes(3),
        )
        .await
        .unwrap()
        .unwrap();
    assert_eq!(updated.status, MediaStatus::Failed);
    assert_eq!(
        updated.targets[&Platform::Youtube].status,
        PlatformStatus::Published
    );
    assert_eq!(
        updated.targets[&Platform::Tiktok].error.as_deref(),
        Some("spam_risk_too_many_posts: too many posts")
    );
    // Lists filter on the derived status.
    let filter = MediaFilter {
        kind: MediaKind::Video,
        status: Some(MediaStatus::Failed),
        platform: None,
    };
    let (listed, total) = store.list_media(&org.id, &filter, 0, 10).await.unwrap();
    assert_eq!((listed, total), (vec![updated.clone()], 1));
    assert_eq!(meters().await, published_once, "a failure is no post");

    for (id, platform, account) in [
        (MediaId::new(), Platform::Youtube, youtube_account.as_str()),
        (
            item.id.clone(),
            Platform::Linkedin,
            youtube_account.as_str(),
        ),
        (item.id.clone(), Platform::Youtube, "someone-else"),
    ] {
        assert_eq!(
            store
                .update_post(&id, platform, account, &published, minutes(4))
                .await
                .unwrap(),
            None
        );
    }
    assert_eq!(store.get_media(&item.id).await.unwrap(), Some(updated));
}

/// A channel is found by organization, platform and account. Refreshed tokens replace the
/// access token and expiry, and the refresh token only when a new one is given. A revoked
/// grant marks it disconnected, and connecting it again clears that.
pub async fn channel_tokens_refresh_and_disconnect(store: Arc<dyn TestStore>) {
    let org = seed_organization(&*store, "Tokens").await;
    let other = seed_organization(&*store, "Tokens, other").await;
    let original = Channel {
        sealed_refresh_token: Some("v1.refresh-1".into()),
        ..channel(&org.id, Platform::Linkedin, "urn:li:person:1", minutes(1))
    };
    let stored = store.put_channel(&original).await.unwrap().unwrap();
    let find = |org: OrganizationId, platform, account: &'static str| {
        let store = Arc::clone(&store);
        async move { store.find_channel(&org, platform, account).await.unwrap() }
    };
    assert_eq!(
        find(org.id.clone(), Platform::Linkedin, "urn:li:person:1").await,
        Some(stored.clone())
    );
    assert_eq!(
        find(other.id.clone(), Platform::Linkedin, "urn:li:person:1").await,
        None
    );
    assert_eq!(
        find(org.id.clone(), Platform::Tiktok, "urn:li:person:1").await,
        None
    );

    store
        .update_channel_tokens(
            &stored.id,
            "v1.access-2",
            None,
            Some(minutes(70)),
            minutes(2),
        )
        .await
        .unwrap();
    let now = find(org.id.clone(), Platform::Linkedin, "urn:li:person:1")
        .await
        .unwrap();
    assert_eq!(now.sealed_access_token, "v1.access-2");
    assert_eq!(now.sealed_refresh_token.as_deref(), Some("v1.refresh-1"));
    assert_eq!(now.expires_at, Some(minutes(70)));
    assert_eq!(now.updated_at, minutes(2));
    store
        .update_channel_tokens(
            &stored.id,
            "v1.access-3",
            Some("v1.refresh-2"),
            None,
            minutes(3),
        )
        .await
        .unwrap();
    let now = find(org.id.clone(), Platform::Linkedin, "urn:li:person:1")
        .await
        .unwrap();
    assert_eq!(now.sealed_refresh_token.as_deref(), Some("v1.refresh-2"));
    assert_eq!(now.expires_at, None);

    store
        .disconnect_channel(&stored.id, "invalid_grant: revoked", minutes(4))
        .await
        .unwrap();
    let now = find(org.id.clone(), Platform::Linkedin, "urn:li:person:1")
        .await
        .unwrap();
    assert_eq!(now.disconnected.as_deref(), Some("invalid_grant: revoked"));
    assert_eq!(store.list_channels(&org.id).await.unwrap(), vec![now]);

    let again = store
        .put_channel(&channel(
            &org.id,
            Platform::Linkedin,
            "urn:li:person:1",
            minutes(5),
        ))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(again.id, stored.id);
    assert_eq!(again.disconnected, None);
}

/// The events of the organization `org`, oldest first (the outbox is shared by every test).
pub(super) async fn events_of(
    store: &dyn TestStore,
    org: &OrganizationId,
) -> Vec<crate::model::Event> {
    let mut all = Vec::new();
    let mut after = None;
    loop {
        let page = store
            .list_events(after.as_ref(), 1_000)
            .await
            .expect("events");
        let Some(last) = page.last() else { break };
        after = Some(last.id.clone());
        all.extend(page.into_iter().filter(|e| &e.organization_id == org));
    }
    all
}

/// A post update writes its events with it: `media.post.published` or `media.post.failed`
/// when the post reaches that state (once: storing the same state again writes nothing), and
/// `media.completed` or `media.failed` when the item's last unfinished post finishes. Each
/// carries its data as of the change; a change that reaches no such state writes none.
pub async fn media_post_updates_write_their_events(store: Arc<dyn TestStore>) {
    use crate::media::{Post, PostFailure};
    use crate::model::{EventSubject, EventType};
    let org = seed_organization(&*store, "Media events").await;
    let mut item = media_item(
        &org.id,
        MediaKind::Video,
        &[Platform::Youtube, Platform::Tiktok],
        minutes(1),
    );
    for target in item.targets.values_mut() {
        let account = target.accounts[0].clone();
        target
            .posts
            .insert(account, Post::new(PlatformStatus::Pending));
    }
    item.scheduled_at = None;
    item.settle(minutes(1));
    store.insert_media(&item, &[]).await.unwrap();
    let youtube = item.targets[&Platform::Youtube].accounts[0].clone();
    let tiktok = item.targets[&Platform::Tiktok].accounts[0].clone();
    let update = |platform, account: String, post: Post, at| {
        let store = Arc::clone(&store);
        let id = item.id.clone();
        async move {
            store
                .update_post(&id, platform, &account, &post, at)
                .await
                .unwrap()
                .expect("the post exists")
        }
    };

    // Processing: no event.
    let mut post = Post::new(PlatformStatus::Processing);
    update(Platform::Youtube, youtube.clone(), post.clone(), minutes(2)).await;
    assert_eq!(events_of(&*store, &org.id).await, vec![]);

    // Published: one event, with the post and the item as it is now.
    post.status = PlatformStatus::Published;
    post.remote_id = Some("vid1".into());
    post.url = Some("https://www.youtube.com/watch?v=vid1".into());
    let after_publish = update(Platform::Youtube, youtube.clone(), post.clone(), minutes(3)).await;
    // The same state again: nothing more.
    update(Platform::Youtube, youtube.clone(), post.clone(), minutes(4)).await;
    let events = events_of(&*store, &org.id).await;
    assert_eq!(events.len(), 1, "{events:?}");
    assert_eq!(events[0].event_type, EventType::MediaPostPublished);
    assert_eq!(events[0].created_at, minutes(3));
    let EventSubject::Snapshot(data) = &events[0].subject else {
        panic!("a media event carries its data: {:?}", events[0]);
    };
    assert_eq!(
        data["post"],
        serde_json::json!({
            "platform": "youtube", "accountId": youtube, "status": "published",
            "postId": "vid1", "url": "https://www.youtube.com/watch?v=vid1", "error": null,
            "failure": null
        })
    );
    assert_eq!(
        data["media"],
        serde_json::to_value(crate::media::api::MediaItemView::from(&after_publish)).unwrap()
    );
    assert_eq!(data["media"]["status"], "processing");

    // The last post fails: its event, then the item's.
    let mut failed = Post::new(PlatformStatus::Processing);
    failed.fail(PostFailure::platform(
        "spam_risk_too_many_posts",
        "too many posts",
    ));
    let settled = update(Platform::Tiktok, tiktok.clone(), failed.clone(), minutes(5)).await;
    assert_eq!(settled.status, MediaStatus::Failed);
    update(Platform::Tiktok, tiktok.clone(), failed, minutes(6)).await;
    let events = events_of(&*store, &org.id).await;
    let types: Vec<EventType> = events.iter().map(|e| e.event_type).collect();
    assert_eq!(
        types,
        [
            EventType::MediaPostPublished,
            EventType::MediaPostFailed,
            EventType::MediaFailed
        ]
    );
    assert!(events.windows(2).all(|pair| pair[0].id < pair[1].id));
    let EventSubject::Snapshot(data) = &events[1].subject else {
        panic!("a media event carries its data");
    };
    assert_eq!(
        data["post"]["failure"],
        serde_json::json!({"source": "platform", "code": "spam_risk_too_many_posts", "message": "too many posts"})
    );
    assert!(
        data["post"]["error"]
            .as_str()
            .is_some_and(|text| text.contains("too many posts")),
        "{data}"
    );
    assert_eq!(data["post"]["postId"], serde_json::Value::Null);
    let EventSubject::Snapshot(data) = &events[2].subject else {
        panic!("a media event carries its data");
    };
    assert_eq!(
        data,
        &serde_json::json!({"media": crate::media::api::MediaItemView::from(&settled)})
    );

    // An item whose posts all publish completes.
    let mut single = media_item(
        &org.id,
        MediaKind::Image,
        &[Platform::Pinterest],
        minutes(7),
    );
    let account = single.targets[&Platform::Pinterest].accounts[0].clone();
    single
        .targets
        .get_mut(&Platform::Pinterest)
        .unwrap()
        .posts
        .insert(account.clone(), Post::new(PlatformStatus::Pending));
    store.insert_media(&single, &[]).await.unwrap();
    let mut pin = Post::new(PlatformStatus::Published);
    pin.remote_id = Some("pin1".into());
    store
        .update_post(&single.id, Platform::Pinterest, &account, &pin, minutes(8))
        .await
        .unwrap()
        .unwrap();
    let types: Vec<EventType> = events_of(&*store, &org.id)
        .await
        .iter()
        .skip(3)
        .map(|e| e.event_type)
        .collect();
    assert_eq!(
        types,
        [EventType::MediaPostPublished, EventType::MediaCompleted]
    );
}

/// Disconnecting a connected channel writes one `channel.disconnected` with it, naming the
/// channel, the reason and how to reconnect; disconnecting it again writes nothing and keeps
/// the first reason; once connected again, the next disconnection writes another.
pub async fn channel_disconnection_writes_one_event(store: Arc<dyn TestStore>) {
    use crate::model::{EventSubject, EventType};
    let org = seed_organization(&*store, "Disconnections").await;
    let stored = store
        .put_channel(&channel(
            &org.id,
            Platform::Youtube,
            "UC-disconnected",
            minutes(1),
        ))
        .await
        .unwrap()
        .unwrap();
    store
        .disconnect_channel(&stored.id, "invalid_grant: revoked", minutes(2))
        .await
        .unwrap();
    store
        .disconnect_channel(&stored.id, "invalid_grant: again", minutes(3))
        .await
        .unwrap();
    let now = store
        .find_channel(&org.id, Platform::Youtube, "UC-disconnected")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(now.disconnected.as_deref(), Some("invalid_grant: revoked"));
    let events = events_of(&*store, &org.id).await;
    assert_eq!(events.len(), 1, "{events:?}");
    assert_eq!(events[0].event_type, EventType::ChannelDisconnected);
    assert_eq!(events[0].created_at, minutes(2));
    let EventSubject::Snapshot(data) = &events[0].subject else {
        panic!("a channel event carries its data");
    };
    assert_eq!(data["channel"]["id"], stored.id.as_str());
    assert_eq!(data["channel"]["platform"], "youtube");
    assert_eq!(data["channel"]["accountId"], "UC-disconnected");
    assert_eq!(data["channel"]["reason"], "invalid_grant: revoked");
    let reconnect = data["channel"]["reconnect"].as_str().unwrap();
    assert!(reconnect.contains(stored.id.as_str()), "{reconnect}");

    // Connected again, then revoked again: a second event.
    store.put_channel(&stored).await.unwrap().unwrap();
    store
        .disconnect_channel(&stored.id, "invalid_grant: third", minutes(5))
        .await
        .unwrap();
    let events = events_of(&*store, &org.id).await;
    assert_eq!(events.len(), 2, "{events:?}");
    // An unknown channel: nothing.
    store
        .disconnect_channel(&ChannelId::new(), "nobody", minutes(6))
        .await
        .unwrap();
    assert_eq!(events_of(&*store, &org.id).await.len(), 2);
}

/// Cancelling an item: every post before its irreversible step is cancelled and its job named,
/// all or none; a post past it (or nothing left to cancel) refuses, naming the platform, and
/// changes nothing; a worker's later write does not undo the cancel; the item's status follows.
pub async fn media_cancel_is_all_or_none_and_kept(store: Arc<dyn TestStore>) {
    use crate::media::{Post, PostStage};
    use crate::store::MediaCancel;
    let org = seed_organization(&*store, "Cancels").await;
    let item_with = |stages: &[(Platform, PostStage)]| {
        let platforms: Vec<Platform> = stages.iter().map(|(p, _)| *p).collect();
        let mut item = media_item(&org.id, MediaKind::Video, &platforms, minutes(1));
        for (platform, stage) in stages {
            let target = item.targets.get_mut(platform).unwrap();
            let mut post = Post::new(PlatformStatus::Pending);
            post.stage = *stage;
            if *stage != PostStage::New {
                post.status = PlatformStatus::Processing;
            }
            post.job_id = Some(crate::ids::JobId::new());
            target.posts.insert(target.accounts[0].clone(), post);
        }
        item.settle(minutes(1));
        item
    };
    assert_eq!(
        store
            .cancel_media(&MediaId::new(), minutes(2))
            .await
            .unwrap(),
        MediaCancel::Missing
    );

    // Every post before its irreversible call: all cancelled, their jobs named.
    let item = item_with(&[
        (Platform::Youtube, PostStage::Started),
        (Platform::Tiktok, PostStage::New),
        (Platform::Linkedin, PostStage::Ready),
    ]);
    store.insert_media(&item, &[]).await.unwrap();
    let item_first_id = item.id.clone();
    let MediaCancel::Cancelled(cancelled, jobs) =
        store.cancel_media(&item.id, minutes(2)).await.unwrap()
    else {
        panic!("the posts could be cancelled");
    };
    assert_eq!(cancelled.status, MediaStatus::Cancelled);
    assert_eq!(cancelled.updated_at, minutes(2));
    let mut expected_jobs: Vec<_> = item
        .targets
        .values()
        .flat_map(|t| t.posts.values())
        .filter_map(|p| p.job_id.clone())
        .collect();
    let mut named = jobs.clone();
    expected_jobs.sort();
    named.sort();
    assert_eq!(named, expected_jobs);
    for target in cancelled.targets.values() {
        assert_eq!(target.status, PlatformStatus::Cancelled);
        assert!(target
            .posts
            .values()
            .all(|p| p.status == PlatformStatus::Cancelled));
    }
    assert_eq!(
        store.get_media(&item.id).await.unwrap(),
        Some((*cancelled).clone())
    );

    // A worker that was on a post writes its next stage: the cancel stands.
    let account = item.targets[&Platform::Linkedin].accounts[0].clone();
    let mut finalizing = item.post(Platform::Linkedin, &account).unwrap().clone();
    finalizing.stage = PostStage::Finalizing;
    let after = store
        .update_post(
            &item.id,
            Platform::Linkedin,
            &account,
            &finalizing,
            minutes(3),
        )
        .await
        .unwrap()
        .expect("the item exists");
    assert_eq!(
        after.post(Platform::Linkedin, &account).unwrap().status,
        PlatformStatus::Cancelled
    );
    assert_eq!(
        store.get_media(&item.id).await.unwrap(),
        Some((*cancelled).clone())
    );

    // A draft, and posts left to a person: cancelled too, and the item with them.
    let mut draft = item_with(&[(Platform::Youtube, PostStage::New)]);
    draft.status = MediaStatus::Draft;
    let account = draft.targets[&Platform::Youtube].accounts[0].clone();
    let mut idle = Post::new(PlatformStatus::Idle);
    idle.job_id = None;
    assert!(draft.set_post(Platform::Youtube, &account, idle, minutes(1)));
    assert_eq!(draft.status, MediaStatus::Draft);
    let mut manual = item_with(&[(Platform::Instagram, PostStage::New)]);
    let account = manual.targets[&Platform::Instagram].accounts[0].clone();
    let mut by_hand = Post::new(PlatformStatus::Manual);
    by_hand.job_id = None;
    assert!(manual.set_post(Platform::Instagram, &account, by_hand, minutes(1)));
    for stored in [&draft, &manual] {
        store.insert_media(stored, &[]).await.unwrap();
        let MediaCancel::Cancelled(cancelled, jobs) =
            store.cancel_media(&stored.id, minutes(2)).await.unwrap()
        else {
            panic!("{:?} can be cancelled", stored.status);
        };
        assert!(jobs.is_empty());
        assert_eq!(cancelled.status, MediaStatus::Cancelled);
    }

    // Nothing left to cancel.
    let MediaCancel::Refused(why) = store.cancel_media(&item.id, minutes(4)).await.unwrap() else {
        panic!("a cancelled item has nothing left to cancel");
    };
    assert!(why.contains("nothing left to cancel"), "{why}");

    // One post past its irreversible call: nothing cancelled, the platform named.
    let item = item_with(&[
        (Platform::Youtube, PostStage::New),
        (Platform::Instagram, PostStage::Finalizing),
    ]);
    store.insert_media(&item, &[]).await.unwrap();
    let MediaCancel::Refused(why) = store.cancel_media(&item.id, minutes(2)).await.unwrap() else {
        panic!("a post in Finalizing cannot be cancelled");
    };
    assert!(
        why.contains("instagram") && why.contains("Instagram"),
        "{why}"
    );
    assert_eq!(store.get_media(&item.id).await.unwrap(), Some(item.clone()));

    // A published post keeps its status; the others are cancelled; the item is completed.
    let mut item = item_with(&[
        (Platform::Youtube, PostStage::Done),
        (Platform::Pinterest, PostStage::New),
    ]);
    let account = item.targets[&Platform::Youtube].accounts[0].clone();
    let mut published = item.post(Platform::Youtube, &account).unwrap().clone();
    published.status = PlatformStatus::Published;
    published.remote_id = Some("vid1".into());
    assert!(item.set_post(Platform::Youtube, &account, published, minutes(1)));
    store.insert_media(&item, &[]).await.unwrap();
    let MediaCancel::Cancelled(cancelled, jobs) =
        store.cancel_media(&item.id, minutes(2)).await.unwrap()
    else {
        panic!("the pending post could be cancelled");
    };
    assert_eq!(jobs.len(), 1);
    assert_eq!(cancelled.status, MediaStatus::Completed);
    assert_eq!(
        cancelled.targets[&Platform::Youtube].status,
        PlatformStatus::Published
    );
    assert_eq!(
        cancelled.targets[&Platform::Pinterest].status,
        PlatformStatus::Cancelled
    );
    let statuses = |status| MediaFilter {
        kind: MediaKind::Video,
        status: Some(status),
        platform: None,
    };
    let (listed, total) = store
        .list_media(&org.id, &statuses(MediaStatus::Cancelled), 0, 10)
        .await
        .unwrap();
    assert_eq!(total, 3, "the first item, the draft and the manual one");
    assert!(listed.iter().all(|i| i.status == MediaStatus::Cancelled));
    assert!(listed.iter().any(|i| i.id == item_first_id));
}

/// Editing an item before publication: texts, schedule and settings change and the posts'
/// jobs move with the schedule, atomically; a post that started, or a job no longer pending,
/// refuses the edit, naming the platform, and changes nothing.
pub async fn media_edit_moves_jobs_and_refuses_once_started(store: Arc<dyn TestStore>) {
    use crate::media::publish::MEDIA_PUBLISH;
    use crate::media::{MediaEdit, Post, PostStage};
    use crate::model::JobRecord;
    use crate::store::MediaEdited;
    let org = seed_organization(&*store, "Edits").await;
    let mut item = media_item(
        &org.id,
        MediaKind::Video,
        &[Platform::Youtube, Platform::Tiktok],
        minutes(1),
    );
    let scheduled = minutes(60);
    item.scheduled_at = Some(scheduled);
    let mut jobs = Vec::new();
    for target in item.targets.values_mut() {
        let mut job = JobRecord::new(
            org.id.clone(),
            MEDIA_PUBLISH,
            serde_json::json!({}),
            None,
            minutes(1),
        );
        job.run_at = scheduled;
        let mut post = Post::new(PlatformStatus::Idle);
        post.job_id = Some(job.id.clone());
        target.posts.insert(target.accounts[0].clone(), post);
        jobs.push(job);
    }
    item.status = MediaStatus::Scheduled;
    item.settle(minutes(1));
    store.insert_media(&item, &jobs).await.unwrap();
    let run_at = |store: Arc<dyn TestStore>, jobs: Vec<JobRecord>| async move {
        let mut times = Vec::new();
        for job in &jobs {
            times.push(store.get_job(&job.id).await.unwrap().unwrap().run_at);
        }
        times
    };
    assert_eq!(
        store
            .edit_media(&MediaId::new(), &MediaEdit::default(), minutes(2))
            .await
            .unwrap(),
        MediaEdited::Missing
    );

    // Later, with a new title and YouTube privacy.
    let mut privacy = serde_json::Map::new();
    privacy.insert("privacy".into(), "private".into());
    let later = MediaEdit {
        title: Some(Some("Renamed".into())),
        description: Some(None),
        scheduled_at: Some(Some(minutes(120))),
        settings: [(Platform::Youtube, privacy.clone())].into_iter().collect(),
        based_on: Some(item.updated_at),
    };
    let MediaEdited::Edited(edited) = store
        .edit_media(&item.id, &later, minutes(2))
        .await
        .unwrap()
    else {
        panic!("an untouched item can be edited");
    };
    // The same edit again was checked against the item before it: refused.
    let MediaEdited::Refused(why) = store
        .edit_media(&item.id, &later, minutes(2))
        .await
        .unwrap()
    else {
        panic!("an edit of an item that changed since is refused");
    };
    assert!(why.contains("changed while"), "{why}");
    let later = MediaEdit {
        based_on: None,
        ..later
    };
    assert_eq!(edited.title.as_deref(), Some("Renamed"));
    assert_eq!(edited.scheduled_at, Some(minutes(120)));
    assert_eq!(edited.status, MediaStatus::Scheduled);
    assert_eq!(edited.updated_at, minutes(2));
    assert_eq!(edited.targets[&Platform::Youtube].settings, privacy);
    assert_eq!(
        edited.targets[&Platform::Tiktok].settings,
        item.targets[&Platform::Tiktok].settings
    );
    assert_eq!(
        store.get_media(&item.id).await.unwrap(),
        Some((*edited).clone())
    );
    assert_eq!(
        run_at(Arc::clone(&store), jobs.clone()).await,
        vec![minutes(120), minutes(120)]
    );

    // As soon as possible: pending, the jobs due now.
    let now = MediaEdit {
        scheduled_at: Some(None),
        ..MediaEdit::default()
    };
    let MediaEdited::Edited(edited) = store.edit_media(&item.id, &now, minutes(3)).await.unwrap()
    else {
        panic!("an untouched item can be edited");
    };
    assert_eq!(edited.status, MediaStatus::Pending);
    assert!(edited
        .targets
        .values()
        .flat_map(|t| t.posts.values())
        .all(|p| p.status == PlatformStatus::Pending));
    assert_eq!(
        run_at(Arc::clone(&store), jobs.clone()).await,
        vec![minutes(3), minutes(3)]
    );

    // A job no longer pending (here cancelled): refused, nothing changed, no job moved.
    store.cancel_job(&jobs[1].id, minutes(4)).await.unwrap();
    let before = store.get_media(&item.id).await.unwrap();
    let MediaEdited::Refused(why) = store
        .edit_media(&item.id, &later, minutes(5))
        .await
        .unwrap()
    else {
        panic!("a job that is not pending refuses the edit");
    };
    let platform_of_second = *item.targets.keys().nth(1).unwrap();
    assert!(why.contains(platform_of_second.as_str()), "{why}");
    assert_eq!(store.get_media(&item.id).await.unwrap(), before);
    assert_eq!(
        store.get_job(&jobs[0].id).await.unwrap().unwrap().run_at,
        minutes(3)
    );

    // A post that started: refused, naming its platform.
    let mut other = media_item(&org.id, MediaKind::Video, &[Platform::Linkedin], minutes(1));
    let target = other.targets.get_mut(&Platform::Linkedin).unwrap();
    let mut started = Post::new(PlatformStatus::Processing);
    started.stage = PostStage::Started;
    target.posts.insert(target.accounts[0].clone(), started);
    other.settle(minutes(1));
    store.insert_media(&other, &[]).await.unwrap();
    let MediaEdited::Refused(why) = store
        .edit_media(&other.id, &later, minutes(5))
        .await
        .unwrap()
    else {
        panic!("a started post refuses the edit");
    };
    assert!(
        why.contains("linkedin") && why.contains("LinkedIn"),
        "{why}"
    );
    assert_eq!(store.get_media(&other.id).await.unwrap(), Some(other));
}

/// Deleting an item: its unfinished posts' jobs are named (published posts need nothing); the
/// item is gone from reads and lists; one whose post is being created is refused, naming the
/// platform, and stays.
pub async fn media_delete_stops_unfinished_posts_or_refuses(store: Arc<dyn TestStore>) {
    use crate::media::{Post, PostStage};
    use crate::store::MediaDelete;
    let org = seed_organization(&*store, "Deletes").await;
    let mut item = media_item(
        &org.id,
        MediaKind::Video,
        &[Platform::Youtube, Platform::Tiktok],
        minutes(1),
    );
    let waiting = crate::ids::JobId::new();
    for (platform, target) in &mut item.targets {
        let mut post = Post::new(PlatformStatus::Idle);
        post.job_id = Some(crate::ids::JobId::new());
        if *platform == Platform::Youtube {
            post.status = PlatformStatus::Published;
            post.stage = PostStage::Done;
            post.remote_id = Some("vid1".into());
        } else {
            post.job_id = Some(waiting.clone());
        }
        target.posts.insert(target.accounts[0].clone(), post);
    }
    item.settle(minutes(1));
    store.insert_media(&item, &[]).await.unwrap();
    assert_eq!(
        store.delete_media(&MediaId::new()).await.unwrap(),
        MediaDelete::Missing
    );
    assert_eq!(
        store.delete_media(&item.id).await.unwrap(),
        MediaDelete::Deleted(Box::new(item.clone()), vec![waiting])
    );
    assert_eq!(store.get_media(&item.id).await.unwrap(), None);
    let all = MediaFilter {
        kind: MediaKind::Video,
        status: None,
        platform: None,
    };
    assert_eq!(store.list_media(&org.id, &all, 0, 10).await.unwrap().1, 0);
    assert_eq!(
        store.delete_media(&item.id).await.unwrap(),
        MediaDelete::Missing
    );

    let mut busy = media_item(
        &org.id,
        MediaKind::Video,
        &[Platform::Pinterest],
        minutes(1),
    );
    let target = busy.targets.get_mut(&Platform::Pinterest).unwrap();
    let mut finalizing = Post::new(PlatformStatus::Processing);
    finalizing.stage = PostStage::Finalizing;
    target.posts.insert(target.accounts[0].clone(), finalizing);
    busy.settle(minutes(1));
    store.insert_media(&busy, &[]).await.unwrap();
    let MediaDelete::Refused(why) = store.delete_media(&busy.id).await.unwrap() else {
        panic!("a post being created refuses the delete");
    };
    assert!(
        why.contains("pinterest") && why.contains("Pinterest"),
        "{why}"
    );
    assert_eq!(store.get_media(&busy.id).await.unwrap(), Some(busy));
}

pub async fn media_post_deletion_starts_once_with_its_job(store: Arc<dyn TestStore>) {
    use crate::media::{Post, PostStage};
    use crate::model::media::MEDIA_DELETE_POST;
    use crate::model::JobStatus;
    use crate::store::PostsDelete;
    let org = seed_organization(&*store, "Post deletions").await;
    let mut item = media_item(
        &org.id,
        MediaKind::Video,
        &[Platform::Youtube, Platform::Linkedin, Platform::Tiktok],
        minutes(1),
    );
    for (platform, target) in &mut item.targets {
        let mut post = Post::new(PlatformStatus::Pending);
        post.job_id = Some(crate::ids::JobId::new());
        if *platform != Platform::Tiktok {
            post.status = PlatformStatus::Published;
            post.stage = PostStage::Done;
            post.remote_id = Some(format!("{}-post", platform.as_str()));
        }
        target.posts.insert(target.accounts[0].clone(), post);
    }
    item.settle(minutes(1));
    store.insert_media(&item, &[]).await.unwrap();
    // The jobs of the item's posts that are deletions.
    let deletion_jobs = || {
        let store = Arc::clone(&store);
        let id = item.id.clone();
        async move {
            let mut jobs = Vec::new();
            let item = store.get_media(&id).await.unwrap().unwrap();
            let posts = item.targets.values().flat_map(|t| t.posts.values());
            for job in posts.filter_map(|p| p.job_id.as_ref()) {
                let job = store.get_job(job).await.unwrap();
                jobs.extend(job.filter(|j| j.job_type == MEDIA_DELETE_POST));
            }
            jobs
        }
    };
    assert_eq!(
        store
            .delete_posts(&MediaId::new(), Platform::Youtube, None, minutes(2))
            .await
            .unwrap(),
        PostsDelete::Missing
    );
    // A post not published refuses, and nothing changes.
    let PostsDelete::Refused(why) = store
        .delete_posts(&item.id, Platform::Tiktok, None, minutes(2))
        .await
        .unwrap()
    else {
        panic!("a pending post cannot be deleted");
    };
    assert!(why.contains("tiktok") && why.contains("pending"), "{why}");
    assert_eq!(store.get_media(&item.id).await.unwrap(), Some(item.clone()));
    assert!(deletion_jobs().await.is_empty());

    // A published one is `deleting`, with a pending job naming it, in one change.
    let PostsDelete::Started(started) = store
        .delete_posts(&item.id, Platform::Youtube, None, minutes(2))
        .await
        .unwrap()
    else {
        panic!("a published post can be deleted");
    };
    let account = item.targets[&Platform::Youtube].accounts[0].clone();
    let post = started.post(Platform::Youtube, &account).unwrap();
    assert_eq!(post.status, PlatformStatus::Deleting);
    assert_eq!(started.updated_at, minutes(2));
    assert_eq!(
        store.get_media(&item.id).await.unwrap(),
        Some((*started).clone())
    );
    let jobs = deletion_jobs().await;
    assert_eq!(jobs.len(), 1);
    assert_eq!(jobs[0].status, JobStatus::Pending);
    assert_eq!(
        jobs[0].payload,
        serde_json::json!({"mediaId": item.id, "platform": "youtube", "account": account})
    );
    // A repeat starts nothing more, and neither does one for a deleted post.
    let PostsDelete::Started(again) = store
        .delete_posts(&item.id, Platform::Youtube, Some(&account), minutes(3))
        .await
        .unwrap()
    else {
        panic!("a repeat answers the item");
    };
    assert_eq!(again, started);
    assert_eq!(deletion_jobs().await.len(), 1);
    // Only the account named.
    let linkedin = item.targets[&Platform::Linkedin].accounts[0].clone();
    let PostsDelete::Started(other) = store
        .delete_posts(
            &item.id,
            Platform::Linkedin,
            Some("urn:li:person:other"),
            minutes(3),
        )
        .await
        .unwrap()
    else {
        panic!("an account with no post there starts nothing");
    };
    assert_eq!(
        other.post(Platform::Linkedin, &linkedin).unwrap().status,
        PlatformStatus::Published
    );
    assert_eq!(deletion_jobs().await.len(), 1);
}
