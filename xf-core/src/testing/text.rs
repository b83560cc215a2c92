//! Text with U+0000 in every text field of every aggregate's records: a store keeps each as
//! U+FFFD and every other character as given ([`crate::store::StoredText`]), and never fails
//! on one. The records are written by hand here, field by field, rather than through the list
//! the rule itself keeps, so a field that list leaves out fails the behaviour of its aggregate.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::json;

use super::*;
use crate::media::{Platform, PlatformStatus, Post, PostFailure, UploadPart};
use crate::model::gsc::RowKind;
use crate::model::media::{FailureSource, FollowUp, FollowUpStatus, MediaEdit, MediaKind};
use crate::store::{
    FetchedPage, IdempotencyClaim, IssueFilter, KeptResponse, NewFinding, ScanFindings,
    StoredResponse, WebhookChanges,
};

/// `label` with a NUL inside it.
fn nul(label: &str) -> String {
    format!("{label}\0-\0end")
}

/// What a store keeps of [`nul`]`(label)`.
fn kept(label: &str) -> String {
    format!("{label}\u{FFFD}-\u{FFFD}end")
}

/// Organizations (name, shop domain, found by name) and properties (name, URL, Search
/// Console site, found by URL).
pub async fn text_nul_kept_in_organizations_and_properties(store: Arc<dyn TestStore>) {
    let name = unique("Org");
    let mut organization = organization(&nul(&name));
    organization.shop_domain = Some(nul("shop"));
    store.insert_organization(&organization).await.unwrap();
    let read = store
        .get_organization(&organization.id)
        .await
        .unwrap()
        .expect("stored");
    assert_eq!(read.name, kept(&name));
    assert_eq!(read.shop_domain.as_deref(), Some(&*kept("shop")));
    let found = store
        .find_organization_by_name(&nul(&name))
        .await
        .unwrap()
        .expect("found by the name as given");
    assert_eq!(found.id, organization.id);

    let url = format!("{}/{}", unique_url(), nul("path"));
    let mut property = property(&organization.id, &url, base_time());
    property.name = nul("site");
    store.insert_property(&property).await.unwrap();
    let read = store
        .get_property(&property.id)
        .await
        .unwrap()
        .expect("stored");
    assert_eq!(read.name, kept("site"));
    assert_eq!(read.url, url.replace('\0', "\u{FFFD}"));
    let found = store
        .find_property_by_url(&organization.id, &url)
        .await
        .unwrap()
        .expect("found by the URL as given");
    assert_eq!(found.id, property.id);
    let linked = store
        .set_property_gsc_site(&property.id, Some(&nul("sc-domain:site")))
        .await
        .unwrap()
        .expect("linked");
    assert_eq!(
        linked.gsc_site_url.as_deref(),
        Some(&*kept("sc-domain:site"))
    );

    // A response kept with the write it answers, replayed as kept.
    let scope = unique("scope");
    let claimed = store
        .claim_idempotency_key(&idempotency_request(&scope, "fp", base_time()))
        .await
        .unwrap();
    assert_eq!(claimed, IdempotencyClaim::Acquired);
    let second = crate::testing::property(&organization.id, &unique_url(), base_time());
    let keeping = KeptResponse {
        scope: scope.clone(),
        fingerprint: "fp".to_owned(),
        response: StoredResponse {
            status: 201,
            body: nul("body"),
        },
    };
    store
        .insert_property_keeping(&second, &keeping)
        .await
        .unwrap();
    let replayed = store
        .claim_idempotency_key(&idempotency_request(&scope, "fp", seconds(base_time(), 1)))
        .await
        .unwrap();
    let body = kept("body");
    assert_eq!(
        replayed,
        IdempotencyClaim::Replay(StoredResponse { status: 201, body })
    );
}

/// Jobs: the payload, the subject, an attempt's error and a completed job's result.
pub async fn text_nul_kept_in_jobs_and_their_outcomes(store: Arc<dyn TestStore>) {
    let organization = seed_organization(&*store, "Jobs with NUL").await;
    let property = seed_property(&*store, &organization, base_time()).await;
    let job_type = unique_job_type("nul");
    let mut job = typed_job(&organization, &property, base_time(), &job_type);
    job.payload = json!({"note": nul("payload"), nul("key"): [nul("item")]});
    if let Some(subject) = job.subject.as_mut() {
        subject.property_name = nul("property");
        subject.tenant_label = nul("tenant");
        subject.shop_domain = Some(nul("shop"));
    }
    insert_counted(&*store, &job).await;
    let read = stored_job(&*store, &job.id).await;
    assert_eq!(
        read.payload,
        json!({"note": kept("payload"), kept("key"): [kept("item")]})
    );
    let subject = read.subject.expect("a subject");
    assert_eq!(subject.property_name, kept("property"));
    assert_eq!(subject.tenant_label, kept("tenant"));
    assert_eq!(subject.shop_domain.as_deref(), Some(&*kept("shop")));

    let claimed = claim_one(&*store, &job, seconds(base_time(), 1), kept_lease()).await;
    let retry = AttemptOutcome::Retry {
        error: nul("attempt failed"),
        run_at: seconds(base_time(), 2),
    };
    finish(&*store, &claimed.attempt, retry, seconds(base_time(), 1)).await;
    let read = stored_job(&*store, &job.id).await;
    assert_eq!(read.error.as_deref(), Some(&*kept("attempt failed")));

    let claimed = claim_one(&*store, &job, seconds(base_time(), 3), kept_lease()).await;
    let result = json!({"title": nul("result")});
    let done = AttemptOutcome::Completed(result);
    finish(&*store, &claimed.attempt, done, seconds(base_time(), 4)).await;
    let read = stored_job(&*store, &job.id).await;
    assert_eq!(read.result, Some(json!({"title": kept("result")})));
}

/// Issues: one inserted alone, and a completed scan's findings, reach and pages.
pub async fn text_nul_kept_in_issues_and_scans(store: Arc<dyn TestStore>) {
    let organization = seed_organization(&*store, "Issues with NUL").await;
    let property = seed_property(&*store, &organization, base_time()).await;
    let job = seed_job(
        &*store,
        &organization,
        &property,
        base_time(),
        JobStatus::Completed,
    )
    .await;
    let mut alone = issue(
        &property,
        &job.id,
        ScanKind::Page,
        IssueStatus::Open,
        base_time(),
    );
    alone.issue_type = nul("type");
    alone.title = nul("title");
    alone.url = Some(nul("url"));
    alone.evidence = nul("evidence");
    alone.how_to_fix = nul("fix");
    alone.subject = nul("subject");
    store.insert_issue(&alone).await.unwrap();
    let read = store.get_issue(&alone.id).await.unwrap().expect("stored");
    assert_eq!(
        (
            &*read.issue_type,
            &*read.title,
            read.url.as_deref(),
            &*read.evidence,
            &*read.how_to_fix,
            &*read.subject
        ),
        (
            &*kept("type"),
            &*kept("title"),
            Some(&*kept("url")),
            &*kept("evidence"),
            &*kept("fix"),
            &*kept("subject")
        )
    );

    let scan_job = typed_job(
        &organization,
        &property,
        base_time(),
        &unique_job_type("nul-scan"),
    );
    insert_counted(&*store, &scan_job).await;
    let claimed = claim_one(&*store, &scan_job, seconds(base_time(), 1), kept_lease()).await;
    let page = format!("{}/{}", property.url.trim_end_matches('/'), nul("page"));
    let findings = ScanFindings {
        organization_id: organization.id.clone(),
        property_id: property.id.clone(),
        job_id: scan_job.id.clone(),
        now: seconds(base_time(), 2),
        score: 90,
        pages_scanned: 1,
        findings: vec![NewFinding {
            issue_type: "title_too_short".to_owned(),
            title: nul("found title"),
            severity: Severity::Low,
            scan_kind: ScanKind::Page,
            url: Some(page.clone()),
            subject: page.clone(),
            evidence: nul("found evidence"),
            how_to_fix: nul("found fix"),
        }],
        reached: vec![page.clone()],
        pages: vec![FetchedPage {
            url: page.clone(),
            status_code: Some(200),
        }],
    };
    let result = json!({"score": 90, "note": nul("scan result")});
    assert!(store
        .complete_scan(findings, &claimed.attempt, &result)
        .await
        .unwrap());
    let filter = IssueFilter {
        types: vec!["title_too_short".to_owned()],
        ..IssueFilter::default()
    };
    let listed = store
        .list_issues(&property.id, &filter, &first_page(10))
        .await
        .unwrap();
    assert_eq!(listed.len(), 1, "{listed:?}");
    let page_kept = page.replace('\0', "\u{FFFD}");
    assert_eq!(listed[0].title, kept("found title"));
    assert_eq!(listed[0].evidence, kept("found evidence"));
    assert_eq!(listed[0].how_to_fix, kept("found fix"));
    assert_eq!(listed[0].url.as_deref(), Some(&*page_kept));
    assert_eq!(listed[0].subject, page_kept);
    let read = stored_job(&*store, &scan_job.id).await;
    assert_eq!(
        read.result,
        Some(json!({"score": 90, "note": kept("scan result")}))
    );
    let pages = store
        .latest_scan_pages(&property.id)
        .await
        .unwrap()
        .expect("the scan's pages");
    assert_eq!(
        pages.pages.iter().map(|p| &*p.url).collect::<Vec<_>>(),
        [&*page_kept]
    );
}

/// Webhooks: name and URL, as inserted and as changed.
pub async fn text_nul_kept_in_webhooks(store: Arc<dyn TestStore>) {
    let organization = seed_organization(&*store, "Webhooks with NUL").await;
    let mut hook = webhook(
        &organization.id,
        &format!("https://hooks.example/{}", nul("in")),
        at("2027-01-01T00:00:00.000Z"),
    );
    hook.name = nul("hook");
    store.insert_webhook(&hook, 10).await.unwrap();
    let read = store.get_webhook(&hook.id).await.unwrap().expect("stored");
    assert_eq!(read.name, kept("hook"));
    assert_eq!(read.url, format!("https://hooks.example/{}", kept("in")));
    let changes = WebhookChanges {
        name: Some(nul("renamed")),
        url: Some(nul("https://hooks.example/changed")),
        ..WebhookChanges::default()
    };
    let changed = store
        .update_webhook(&hook.id, &changes, at("2027-01-01T00:00:01.000Z"))
        .await
        .unwrap()
        .expect("changed");
    assert_eq!(changed.name, kept("renamed"));
    assert_eq!(changed.url, kept("https://hooks.example/changed"));
}

/// Search Console: the account's email, and a snapshot's site and rows.
pub async fn text_nul_kept_in_search_console(store: Arc<dyn TestStore>) {
    let organization = seed_organization(&*store, "Search Console with NUL").await;
    let property = seed_property(&*store, &organization, base_time()).await;
    let account = crate::model::gsc::GscAccount {
        organization_id: organization.id.clone(),
        sealed_refresh_token: "v1.sealed".to_owned(),
        account_email: Some(nul("owner@example.com")),
        linked_at: base_time(),
        revoked_at: None,
    };
    assert!(store.put_gsc_account(&account).await.unwrap());
    let read = store
        .get_gsc_account(&organization.id)
        .await
        .unwrap()
        .expect("linked");
    assert_eq!(
        read.account_email.as_deref(),
        Some(&*kept("owner@example.com"))
    );

    let mut new = snapshot(&property, &nul("sc-domain:nul"), base_time(), 1, 1);
    new.queries[0].key = nul("query");
    new.pages[0].key = nul("https://example.com/page");
    store.replace_gsc_snapshot(&new).await.unwrap();
    let read = store
        .get_gsc_snapshot(&property.id)
        .await
        .unwrap()
        .expect("a snapshot");
    assert_eq!(read.site_url, kept("sc-domain:nul"));
    let queries = store
        .list_gsc_rows(&property.id, RowKind::Query, None, 10)
        .await
        .unwrap();
    assert_eq!(queries[0].key, kept("query"));
    let pages = store
        .list_gsc_rows(&property.id, RowKind::Page, None, 10)
        .await
        .unwrap();
    assert_eq!(pages[0].key, kept("https://example.com/page"));
}

/// Media: an item's title, description, file name, settings and posts (as inserted, as a
/// platform's answer updates them, as edited), a channel's names, tokens' neighbours and
/// disconnection, and an upload's metadata.
pub async fn text_nul_kept_in_media_channels_and_uploads(store: Arc<dyn TestStore>) {
    let organization = seed_organization(&*store, "Media with NUL").await;
    let mut item = media_item(
        &organization.id,
        MediaKind::Video,
        &[Platform::Tiktok],
        minutes(1),
    );
    item.title = Some(nul("title"));
    item.description = Some(nul("description"));
    item.file.name = nul("clip.mp4");
    let target = item.targets.get_mut(&Platform::Tiktok).expect("the target");
    target
        .settings
        .insert("caption".into(), nul("caption").into());
    let account = target.accounts[0].clone();
    target
        .posts
        .insert(account.clone(), Post::new(PlatformStatus::Idle));
    store.insert_media(&item, &[]).await.unwrap();
    let read = store.get_media(&item.id).await.unwrap().expect("stored");
    assert_eq!(read.title.as_deref(), Some(&*kept("title")));
    assert_eq!(read.description.as_deref(), Some(&*kept("description")));
    assert_eq!(read.file.name, kept("clip.mp4"));
    assert_eq!(
        read.targets[&Platform::Tiktok].settings["caption"],
        json!(kept("caption"))
    );

    let mut post = Post::new(PlatformStatus::Failed);
    post.remote_id = Some(nul("remote"));
    post.url = Some(nul("https://tiktok.example/post"));
    post.error = Some(nul("refused"));
    post.checkpoint = json!({"publishId": nul("publish")});
    post.failure = Some(PostFailure {
        source: FailureSource::Platform,
        code: nul("spam_risk"),
        message: nul("the platform said"),
    });
    post.first_comment = Some(FollowUp {
        status: FollowUpStatus::Failed,
        id: Some(nul("comment")),
        error: Some(nul("comment refused")),
    });
    let updated = store
        .update_post(&item.id, Platform::Tiktok, &account, &post, minutes(2))
        .await
        .unwrap()
        .expect("updated");
    let read = updated
        .post(Platform::Tiktok, &account)
        .expect("the post")
        .clone();
    assert_eq!(read.remote_id.as_deref(), Some(&*kept("remote")));
    assert_eq!(
        read.url.as_deref(),
        Some(&*kept("https://tiktok.example/post"))
    );
    assert_eq!(read.error.as_deref(), Some(&*kept("refused")));
    assert_eq!(read.checkpoint, json!({"publishId": kept("publish")}));
    let failure = read.failure.expect("the failure");
    assert_eq!(
        (failure.code, failure.message),
        (kept("spam_risk"), kept("the platform said"))
    );
    let comment = read.first_comment.expect("the comment");
    assert_eq!(
        (comment.id, comment.error),
        (Some(kept("comment")), Some(kept("comment refused")))
    );
    // The failure's events carry the post as kept.
    let events = super::media::events_of(&*store, &organization.id).await;
    let data: Vec<&serde_json::Value> = events
        .iter()
        .filter_map(|event| match &event.subject {
            crate::model::EventSubject::Snapshot(data) => Some(data),
            crate::model::EventSubject::Job(_) => None,
        })
        .collect();
    assert!(!data.is_empty(), "the failed post wrote its event");
    for data in data {
        let text = data.to_string();
        assert!(!text.contains("\\u0000"), "{text}");
        assert!(text.contains(&kept("refused")), "{text}");
    }

    let mut draft = media_item(
        &organization.id,
        MediaKind::Video,
        &[Platform::Tiktok],
        minutes(1),
    );
    draft.status = crate::media::MediaStatus::Draft;
    store.insert_media(&draft, &[]).await.unwrap();
    let edit = MediaEdit {
        title: Some(Some(nul("edited"))),
        description: Some(Some(nul("edited description"))),
        scheduled_at: None,
        settings: BTreeMap::from([(
            Platform::Tiktok,
            serde_json::Map::from_iter([("caption".to_owned(), json!(nul("edited caption")))]),
        )]),
        based_on: None,
    };
    store
        .edit_media(&draft.id, &edit, minutes(3))
        .await
        .unwrap();
    let read = store.get_media(&draft.id).await.unwrap().expect("stored");
    assert_eq!(read.title.as_deref(), Some(&*kept("edited")));
    assert_eq!(
        read.description.as_deref(),
        Some(&*kept("edited description"))
    );
    assert_eq!(
        read.targets[&Platform::Tiktok].settings["caption"],
        json!(kept("edited caption"))
    );

    let mut connected = channel(&organization.id, Platform::Pinterest, "pin", minutes(1));
    connected.account_id = nul("account");
    connected.name = nul("board owner");
    connected.thumbnail = Some(nul("https://cdn.example/pin.png"));
    store.put_channel(&connected).await.unwrap();
    let read = store
        .find_channel(&organization.id, Platform::Pinterest, &nul("account"))
        .await
        .unwrap()
        .expect("found by the account id as given");
    assert_eq!(read.account_id, kept("account"));
    assert_eq!(read.name, kept("board owner"));
    assert_eq!(
        read.thumbnail.as_deref(),
        Some(&*kept("https://cdn.example/pin.png"))
    );
    let boarded = store
        .set_channel_default_board(&read.id, Some(&nul("board")), minutes(2))
        .await
        .unwrap()
        .expect("set");
    assert_eq!(boarded.default_board.as_deref(), Some(&*kept("board")));
    store
        .disconnect_channel(&read.id, &nul("revoked"), minutes(3))
        .await
        .unwrap();
    let read = store
        .find_channel(&organization.id, Platform::Pinterest, &kept("account"))
        .await
        .unwrap()
        .expect("kept, disconnected");
    assert_eq!(read.disconnected.as_deref(), Some(&*kept("revoked")));

    let mut started = upload(&organization.id, 10, minutes(1));
    started.metadata = vec![(nul("name"), nul("value"))];
    store.insert_upload(&started).await.unwrap();
    let part = UploadPart {
        offset: 0,
        length: 10,
        key: nul("uploads/part"),
    };
    store
        .append_upload_part(&started.id, &part, minutes(2))
        .await
        .unwrap();
    let read = store
        .get_upload(&started.id, minutes(2))
        .await
        .unwrap()
        .expect("stored");
    assert_eq!(read.metadata, vec![(kept("name"), kept("value"))]);
    assert_eq!(read.parts[0].key, kept("uploads/part"));
}
