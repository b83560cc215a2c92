//! Behaviours of webhooks, their delivery queue and their delivery log.
//!
//! Three operations reach beyond the records they name, and the suite keeps them apart:
//!
//! - A fan-out takes everyone's events and a claim everyone's due messages, so
//!   [`webhook_delivery_queue_lifecycle`] alone fans out, claims and records attempts. It
//!   fans out until a fan-out takes nothing, claims with a large limit until a claim comes
//!   back short, and looks at its own webhooks' messages only, never at the counts.
//! - A purge takes every old log row: [`webhook_purge_deliveries_removes_old_rows`] alone
//!   purges, before 2026-06-01, and checks its own rows only. Its rows are from early 2026;
//!   every other behaviour logs its attempts at or after 2027-01-01, out of the
//!   purge's reach.
//!
//! Only the organizations of these behaviours have webhooks, so the other behaviours' events
//! queue nothing.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use super::{
    assert_single_event, at, completed, finish, first_page, insert_counted, minutes, random_token,
    run_concurrently, seconds, seed_job, seed_organization, seed_property, seed_running_job,
    sort_newest_first, stored_job, tally, typed_job, unique, unique_job_type, unique_url,
    wait_for_signal, walk_pages, TestStore,
};
use crate::error::StoreError;
use crate::ids::{DeliveryId, EventId, OrganizationId, WebhookId};
use crate::model::{EventType, JobStatus, Organization, Webhook, WebhookDelivery, WebhookSecrets};
use crate::store::{
    After, AttemptToken, CancelOutcome, ClaimedDelivery, DeliveryRecord, NextStep, QueueSignal,
    SecretRotation, Store, WebhookChanges,
};
use crate::time::Timestamp;

/// A webhook cap no behaviour reaches, for webhooks that are not about the cap.
const NO_WEBHOOK_LIMIT: u64 = 1_000;

/// Messages asked for per claim: far more than the suite ever queues at once.
const CLAIM_LIMIT: usize = 500;

/// A new, enabled webhook of the organization posting to `url`, subscribed to every event
/// type, with a fresh id, a random sealed secret (no previous one) and its prefix, and no
/// delivery yet, created and updated at `created_at`. Not stored: pass it to
/// [`WebhookStore::insert_webhook`](crate::store::WebhookStore::insert_webhook).
pub fn webhook(organization_id: &OrganizationId, url: &str, created_at: Timestamp) -> Webhook {
    let secret = random_token();
    Webhook {
        id: WebhookId::new(),
        organization_id: organization_id.clone(),
        name: unique("Hook"),
        url: url.to_owned(),
        secret_prefix: format!("whsec_{}", &secret[..6]),
        events: EventType::ALL.to_vec(),
        enabled: true,
        last_delivery_at: None,
        last_delivery_status: None,
        created_at,
        updated_at: created_at,
        secrets: WebhookSecrets {
            current: format!("sealed:{secret}"),
            previous: None,
        },
    }
}

/// A log row, with a fresh id, of an attempt to deliver an `event` to the webhook at
/// `created_at`, answered with `status_code` (0: no answer) after 120 ms; successful when the
/// status is 2xx. Not stored: pass it to
/// [`WebhookStore::record_test_delivery`](crate::store::WebhookStore::record_test_delivery)
/// or in a [`DeliveryRecord`].
pub fn delivery(
    webhook_id: &WebhookId,
    event: EventType,
    status_code: u16,
    created_at: Timestamp,
) -> WebhookDelivery {
    WebhookDelivery {
        id: DeliveryId::new(),
        webhook_id: webhook_id.clone(),
        event,
        status_code,
        success: (200..300).contains(&status_code),
        duration_ms: 120,
        created_at,
    }
}

/// `2027-01-01T00:00:00.000Z` plus `n` minutes: when the behaviours log attempts, out of
/// reach of the one purge of the suite.
fn logged(n: i64) -> Timestamp {
    at("2027-01-01T00:00:00.000Z").plus(chrono::Duration::minutes(n))
}

fn delivery_position(row: &WebhookDelivery) -> After {
    After {
        created_at: row.created_at,
        id: row.id.to_string(),
    }
}

/// Inserts [`webhook`] of the organization created at `created_at`, first changed by
/// `change`.
async fn seed_webhook(
    store: &dyn Store,
    organization: &Organization,
    created_at: Timestamp,
    change: impl FnOnce(&mut Webhook),
) -> Webhook {
    let mut hook = webhook(&organization.id, &unique_url(), created_at);
    change(&mut hook);
    store
        .insert_webhook(&hook, NO_WEBHOOK_LIMIT)
        .await
        .expect("insert webhook");
    hook
}

/// The webhook as stored now; it must exist.
async fn stored_webhook(store: &dyn Store, id: &WebhookId) -> Webhook {
    store
        .get_webhook(id)
        .await
        .expect("get webhook")
        .unwrap_or_else(|| panic!("webhook {id} exists"))
}

/// Records a test delivery of a webhook that exists.
async fn log_test_delivery(store: &dyn Store, row: &WebhookDelivery) {
    assert!(
        store.record_test_delivery(row).await.expect("record"),
        "webhook {} exists",
        row.webhook_id
    );
}

/// The whole delivery log of the webhook.
async fn whole_log(store: &dyn Store, id: &WebhookId) -> Vec<WebhookDelivery> {
    store
        .list_deliveries(id, &first_page(1_000))
        .await
        .expect("list deliveries")
}

/// Sets `expected.updated_at` to `now`, applies `changes` and checks that both the answer and
/// the stored webhook are `expected`.
async fn check_update(
    store: &dyn Store,
    expected: &mut Webhook,
    changes: WebhookChanges,
    now: Timestamp,
) {
    expected.updated_at = now;
    let updated = store
        .update_webhook(&expected.id, &changes, now)
        .await
        .expect("update webhook");
    assert_eq!(updated.as_ref(), Some(&*expected), "{changes:?}");
    assert_eq!(stored_webhook(store, &expected.id).await, *expected);
}

/// Fans out until a fan-out takes nothing, in `tasks` concurrent loops; each fan-out is
/// checked to take at most its limit.
async fn fan_out_everything(store: &Arc<dyn TestStore>, tasks: usize, now: Timestamp) {
    run_concurrently(tasks, |_| {
        let store = Arc::clone(store);
        async move {
            for _ in 0..10_000 {
                let taken = store.fan_out_events(50, now).await.expect("fan out");
                assert!(taken <= 50, "a fan-out takes at most `limit` events");
                if taken == 0 {
                    return;
                }
            }
            panic!("the fan-out does not end");
        }
    })
    .await;
}

/// Claims at `now` until a claim comes back short; returns the claims of `mine`'s webhooks.
async fn claim_mine(
    store: &dyn Store,
    mine: &HashSet<WebhookId>,
    now: Timestamp,
    lease_until: Timestamp,
) -> Vec<ClaimedDelivery> {
    let mut claimed = Vec::new();
    for _ in 0..1_000 {
        let batch = store
            .claim_deliveries(CLAIM_LIMIT, now, lease_until)
            .await
            .expect("claim deliveries");
        assert!(batch.len() <= CLAIM_LIMIT, "a claim takes at most `limit`");
        let short = batch.len() < CLAIM_LIMIT;
        claimed.extend(batch.into_iter().filter(|c| mine.contains(&c.webhook.id)));
        if short {
            return claimed;
        }
    }
    panic!("claiming does not end");
}

/// (webhook, event) of each claim, sorted.
fn pairs(claimed: &[ClaimedDelivery]) -> Vec<(WebhookId, EventId)> {
    let mut pairs: Vec<_> = claimed
        .iter()
        .map(|c| (c.webhook.id.clone(), c.event.id.clone()))
        .collect();
    pairs.sort();
    pairs
}

/// The record of an attempt of `claim` answered with `status` at `when`.
fn outcome(
    claim: &ClaimedDelivery,
    status: u16,
    when: Timestamp,
    next: NextStep,
) -> DeliveryRecord {
    DeliveryRecord {
        event_id: claim.event.id.clone(),
        webhook_id: claim.webhook.id.clone(),
        token: claim.token,
        log: delivery(&claim.webhook.id, claim.event.event_type, status, when),
        next,
    }
}

/// Records one attempt; returns the store's answer for it.
async fn record_one(store: &dyn Store, record: DeliveryRecord) -> bool {
    let answers = store
        .record_deliveries(std::slice::from_ref(&record))
        .await
        .expect("record deliveries");
    assert_eq!(answers.len(), 1, "one answer per record");
    answers[0]
}

/// An inserted webhook reads back equal, every field included; an unknown id is `None`.
/// `list_webhooks` lists the organization's own, newest first (on equal creation times, the
/// greatest id first), disabled ones too; an organization without any lists none. Inserting a
/// taken id is [`StoreError::Duplicate`].
pub async fn webhook_insert_get_and_list(store: Arc<dyn TestStore>) {
    let s = &*store;
    let org = seed_organization(s, "Hooks").await;
    let other = seed_organization(s, "Hooks neighbour").await;
    let empty = seed_organization(s, "Hooks empty").await;

    let full = seed_webhook(s, &org, minutes(5), |hook| {
        hook.name = "Everything set".to_owned();
        hook.events = vec![EventType::JobFailed, EventType::JobCompleted];
        hook.enabled = false;
        hook.last_delivery_at = Some(logged(3));
        hook.last_delivery_status = Some(0);
        hook.updated_at = minutes(7);
        hook.secrets.previous = Some(("sealed:before".to_owned(), minutes(9)));
    })
    .await;
    let older = seed_webhook(s, &org, minutes(1), |_| {}).await;
    let twin_a = seed_webhook(s, &org, minutes(3), |_| {}).await;
    let twin_b = seed_webhook(s, &org, minutes(3), |_| {}).await;
    let theirs = seed_webhook(s, &other, minutes(4), |_| {}).await;

    for hook in [&full, &older, &twin_a, &twin_b, &theirs] {
        assert_eq!(stored_webhook(s, &hook.id).await, *hook);
    }
    assert_eq!(store.get_webhook(&WebhookId::new()).await.unwrap(), None);

    let mut expected = vec![full.clone(), older, twin_a, twin_b];
    sort_newest_first(&mut expected, |hook| (hook.created_at, hook.id.clone()));
    assert_eq!(store.list_webhooks(&org.id).await.unwrap(), expected);
    assert_eq!(store.list_webhooks(&other.id).await.unwrap(), vec![theirs]);
    assert_eq!(store.list_webhooks(&empty.id).await.unwrap(), vec![]);

    let taken = Webhook {
        id: full.id.clone(),
        ..webhook(&org.id, &unique_url(), minutes(8))
    };
    assert!(matches!(
        store.insert_webhook(&taken, NO_WEBHOOK_LIMIT).await,
        Err(StoreError::Duplicate(_))
    ));
    assert_eq!(stored_webhook(s, &full.id).await, full);
    assert_eq!(store.list_webhooks(&org.id).await.unwrap(), expected);
}

/// `insert_webhook` refuses with [`StoreError::LimitReached`], storing nothing, when the
/// organization has `max` webhooks already, disabled ones included; other organizations'
/// webhooks do not count. With `max` 0 nothing is inserted.
pub async fn webhook_insert_refuses_at_max(store: Arc<dyn TestStore>) {
    let s = &*store;
    let org = seed_organization(s, "Capped hooks").await;
    let other = seed_organization(s, "Capped neighbour").await;
    for n in 0..3 {
        let mut hook = webhook(&other.id, &unique_url(), minutes(n));
        hook.enabled = n != 0;
        store.insert_webhook(&hook, 3).await.unwrap();
    }
    for n in 0..3 {
        let mut hook = webhook(&org.id, &unique_url(), minutes(n));
        hook.enabled = n != 1;
        store.insert_webhook(&hook, 3).await.unwrap();
    }
    let refused = webhook(&org.id, &unique_url(), minutes(10));
    assert_eq!(
        store.insert_webhook(&refused, 3).await,
        Err(StoreError::LimitReached("webhooks"))
    );
    assert!(matches!(
        store.insert_webhook(&refused, 2).await,
        Err(StoreError::LimitReached(_))
    ));
    assert_eq!(store.get_webhook(&refused.id).await.unwrap(), None);
    assert_eq!(store.list_webhooks(&org.id).await.unwrap().len(), 3);
    store.insert_webhook(&refused, 4).await.unwrap();
    assert_eq!(store.list_webhooks(&org.id).await.unwrap().len(), 4);

    let fresh = seed_organization(s, "Capped at zero").await;
    let none = webhook(&fresh.id, &unique_url(), minutes(0));
    assert!(matches!(
        store.insert_webhook(&none, 0).await,
        Err(StoreError::LimitReached(_))
    ));
    assert_eq!(store.list_webhooks(&fresh.id).await.unwrap(), vec![]);
}

/// Concurrent inserts never pass the cap: of 20 webhooks inserted at once with `max` 10,
/// exactly 10 are stored and the other 10 are refused with [`StoreError::LimitReached`].
pub async fn webhook_concurrent_inserts_respect_max(store: Arc<dyn TestStore>) {
    let org = seed_organization(&*store, "Racing hooks").await;
    let results = run_concurrently(20, |n| {
        let store = Arc::clone(&store);
        let hook = webhook(&org.id, &unique_url(), minutes(n as i64));
        async move { store.insert_webhook(&hook, 10).await }
    })
    .await;
    assert_eq!(tally(&results), (10, 10), "{results:?}");
    assert_eq!(store.list_webhooks(&org.id).await.unwrap().len(), 10);
}

/// `update_webhook` applies each change alone (name, URL, events, turning off, turning on),
/// several at once, or none, and sets `updatedAt` to `now` every time, leaving every other
/// field, `lastDelivery*` included (a delivery recorded since the webhook was read is kept),
/// as it is; it answers the webhook as it is now. An unknown id is `None` and creates nothing.
pub async fn webhook_update_applies_each_change(store: Arc<dyn TestStore>) {
    let s = &*store;
    let org = seed_organization(s, "Changed hooks").await;
    let bystander = seed_webhook(s, &org, minutes(1), |_| {}).await;
    let mut expected = seed_webhook(s, &org, minutes(2), |_| {}).await;
    let row = delivery(&expected.id, EventType::JobCompleted, 200, logged(1));
    log_test_delivery(s, &row).await;
    expected.last_delivery_at = Some(logged(1));
    expected.last_delivery_status = Some(200);

    expected.name = "Renamed".to_owned();
    let changes = WebhookChanges {
        name: Some("Renamed".to_owned()),
        ..WebhookChanges::default()
    };
    check_update(s, &mut expected, changes, minutes(101)).await;

    let url = unique_url();
    expected.url.clone_from(&url);
    let changes = WebhookChanges {
        url: Some(url),
        ..WebhookChanges::default()
    };
    check_update(s, &mut expected, changes, minutes(102)).await;

    expected.events = vec![EventType::JobFailed];
    let changes = WebhookChanges {
        events: Some(vec![EventType::JobFailed]),
        ..WebhookChanges::default()
    };
    check_update(s, &mut expected, changes, minutes(103)).await;

    expected.enabled = false;
    let changes = WebhookChanges {
        enabled: Some(false),
        ..WebhookChanges::default()
    };
    check_update(s, &mut expected, changes, minutes(104)).await;

    // A delivery recorded between a read and an update is kept.
    let row = delivery(&expected.id, EventType::JobFailed, 0, logged(2));
    log_test_delivery(s, &row).await;
    expected.last_delivery_at = Some(logged(2));
    expected.last_delivery_status = Some(0);

    expected.enabled = true;
    let changes = WebhookChanges {
        enabled: Some(true),
        ..WebhookChanges::default()
    };
    check_update(s, &mut expected, changes, minutes(105)).await;

    check_update(s, &mut expected, WebhookChanges::default(), minutes(106)).await;

    let url = unique_url();
    let events = vec![EventType::JobCancelled, EventType::JobCompleted];
    expected.name = "All at once".to_owned();
    expected.url.clone_from(&url);
    expected.events.clone_from(&events);
    expected.enabled = false;
    let changes = WebhookChanges {
        name: Some("All at once".to_owned()),
        url: Some(url),
        events: Some(events),
        enabled: Some(false),
    };
    check_update(s, &mut expected, changes, minutes(107)).await;

    let unknown = WebhookId::new();
    let changes = WebhookChanges {
        name: Some("Nobody".to_owned()),
        ..WebhookChanges::default()
    };
    assert_eq!(
        store
            .update_webhook(&unknown, &changes, minutes(108))
            .await
            .unwrap(),
        None
    );
    assert_eq!(store.get_webhook(&unknown).await.unwrap(), None);
    assert_eq!(stored_webhook(s, &bystander.id).await, bystander);
    assert_eq!(
        whole_log(s, &expected.id).await.len(),
        2,
        "updates write no log rows"
    );
}

/// `rotate_webhook_secret` makes the current secret the previous one, signing until the
/// rotation's `previous_until` (a secret two rotations old is gone), the rotation's secret and
/// prefix the current ones, and `updatedAt` the rotation's `now`, changing nothing else; it
/// answers the webhook as it is now. A rotation of a secret that is no longer current (another
/// rotation replaced it) changes nothing and answers the webhook as it is: of concurrent
/// rotations of one secret exactly one applies. An unknown id is `None`.
pub async fn webhook_rotate_secret_keeps_the_replaced_one(store: Arc<dyn TestStore>) {
    let s = &*store;
    let org = seed_organization(s, "Rotated hooks").await;
    let original = seed_webhook(s, &org, minutes(1), |hook| {
        hook.last_delivery_at = Some(logged(1));
        hook.last_delivery_status = Some(503);
    })
    .await;
    let rotation = |replaces: &str, label: &str, n: i64| SecretRotation {
        replaces: replaces.to_owned(),
        sealed: format!("sealed:{label}:{}", random_token()),
        prefix: format!("whsec_{}", &random_token()[..6]),
        previous_until: minutes(n + 24 * 60),
        now: minutes(n),
    };

    let first = rotation(&original.secrets.current, "first", 10);
    let mut expected = original.clone();
    expected.secrets = WebhookSecrets {
        current: first.sealed.clone(),
        previous: Some((original.secrets.current.clone(), first.previous_until)),
    };
    expected.secret_prefix.clone_from(&first.prefix);
    expected.updated_at = first.now;
    let rotated = store
        .rotate_webhook_secret(&original.id, &first)
        .await
        .unwrap();
    assert_eq!(rotated.as_ref(), Some(&expected));
    assert_eq!(stored_webhook(s, &original.id).await, expected);

    let second = rotation(&first.sealed, "second", 20);
    expected.secrets = WebhookSecrets {
        current: second.sealed.clone(),
        previous: Some((first.sealed.clone(), second.previous_until)),
    };
    expected.secret_prefix.clone_from(&second.prefix);
    expected.updated_at = second.now;
    let rotated = store
        .rotate_webhook_secret(&original.id, &second)
        .await
        .unwrap();
    assert_eq!(rotated.as_ref(), Some(&expected));
    assert_eq!(stored_webhook(s, &original.id).await, expected);

    // A rotation of a secret already replaced changes nothing.
    let stale = rotation(&first.sealed, "stale", 25);
    let answer = store
        .rotate_webhook_secret(&original.id, &stale)
        .await
        .unwrap();
    assert_eq!(answer.as_ref(), Some(&expected));
    assert_eq!(stored_webhook(s, &original.id).await, expected);

    let racing: Vec<SecretRotation> = (0..8)
        .map(|n| rotation(&second.sealed, &format!("racer{n}"), 30))
        .collect();
    let answers = run_concurrently(racing.len(), |n| {
        let store = Arc::clone(&store);
        let id = original.id.clone();
        let rotation = racing[n].clone();
        async move { store.rotate_webhook_secret(&id, &rotation).await }
    })
    .await;
    let answers: Vec<Webhook> = answers
        .into_iter()
        .map(|answer| answer.unwrap().expect("the webhook exists"))
        .collect();
    let winners: Vec<&SecretRotation> = racing
        .iter()
        .filter(|r| answers.iter().any(|a| a.secrets.current == r.sealed))
        .collect();
    assert_eq!(
        winners.len(),
        1,
        "exactly one concurrent rotation applies: {answers:?}"
    );
    let now = stored_webhook(s, &original.id).await;
    assert_eq!(now.secrets.current, winners[0].sealed);
    assert_eq!(
        now.secrets.previous.as_ref().map(|(sealed, _)| sealed),
        Some(&second.sealed),
        "the winner replaced the secret they all found"
    );
    assert!(
        answers.iter().all(|answer| *answer == now),
        "every racer is answered the webhook as the winner left it"
    );

    let unknown = WebhookId::new();
    assert_eq!(
        store
            .rotate_webhook_secret(&unknown, &rotation("any", "nobody", 40))
            .await
            .unwrap(),
        None
    );
    assert_eq!(store.get_webhook(&unknown).await.unwrap(), None);
}

/// `delete_webhook` removes the webhook and its delivery log, answers `true`, and frees its
/// place under the cap; other webhooks and their logs stay. Deleting it again or an unknown
/// id answers `false`, and a test delivery to it is not recorded.
pub async fn webhook_delete_removes_it_and_its_log(store: Arc<dyn TestStore>) {
    let s = &*store;
    let org = seed_organization(s, "Deleted hooks").await;
    let doomed = seed_webhook(s, &org, minutes(1), |_| {}).await;
    let kept = seed_webhook(s, &org, minutes(2), |_| {}).await;
    for n in 0..3 {
        log_test_delivery(
            s,
            &delivery(&doomed.id, EventType::JobFailed, 500, logged(n)),
        )
        .await;
    }
    let kept_row = delivery(&kept.id, EventType::JobCompleted, 200, logged(5));
    log_test_delivery(s, &kept_row).await;
    let kept = stored_webhook(s, &kept.id).await;

    let third = webhook(&org.id, &unique_url(), minutes(3));
    assert!(matches!(
        store.insert_webhook(&third, 2).await,
        Err(StoreError::LimitReached(_))
    ));

    assert!(store.delete_webhook(&doomed.id).await.unwrap());
    assert_eq!(store.get_webhook(&doomed.id).await.unwrap(), None);
    assert_eq!(
        store.list_webhooks(&org.id).await.unwrap(),
        vec![kept.clone()]
    );
    assert_eq!(whole_log(s, &doomed.id).await, vec![]);
    assert_eq!(whole_log(s, &kept.id).await, vec![kept_row]);

    assert!(!store.delete_webhook(&doomed.id).await.unwrap());
    assert!(!store.delete_webhook(&WebhookId::new()).await.unwrap());
    let late = delivery(&doomed.id, EventType::JobFailed, 200, logged(9));
    assert!(!store.record_test_delivery(&late).await.unwrap());
    assert_eq!(whole_log(s, &doomed.id).await, vec![]);
    assert_eq!(store.get_webhook(&doomed.id).await.unwrap(), None);

    store.insert_webhook(&third, 2).await.unwrap();
    assert_eq!(store.list_webhooks(&org.id).await.unwrap().len(), 2);
}

/// `record_test_delivery` writes its log row and sets the webhook's `lastDeliveryAt` and
/// `lastDeliveryStatus` from it (not `updatedAt`), answering `true`; for an unknown webhook it
/// writes nothing and answers `false`. `list_deliveries` lists the webhook's own rows newest
/// first (on equal times, the greatest id first), every row exactly once when read page by
/// page after the last row of each page; an unknown webhook has none, and a page of 0 is
/// empty.
pub async fn webhook_test_deliveries_logged_newest_first(store: Arc<dyn TestStore>) {
    let s = &*store;
    let org = seed_organization(s, "Logged hooks").await;
    let hook = seed_webhook(s, &org, minutes(1), |_| {}).await;
    let neighbour = seed_webhook(s, &org, minutes(2), |_| {}).await;

    let mut rows = Vec::new();
    let mut theirs = Vec::new();
    for n in 0..9_i64 {
        // Times repeat and run against the order of ids.
        let status = [200, 500, 404, 0][n as usize % 4];
        let row = delivery(
            &hook.id,
            EventType::JobCompleted,
            status,
            logged((n * 7) % 5),
        );
        log_test_delivery(s, &row).await;
        rows.push(row);
        let row = delivery(
            &neighbour.id,
            EventType::JobFailed,
            204,
            logged((n * 3) % 5),
        );
        log_test_delivery(s, &row).await;
        theirs.push(row);
    }
    let last = delivery(&hook.id, EventType::JobCancelled, 0, logged(10));
    log_test_delivery(s, &last).await;
    assert!(!last.success);
    rows.push(last);

    let mut expected = rows;
    sort_newest_first(&mut expected, |row| (row.created_at, row.id.clone()));
    sort_newest_first(&mut theirs, |row| (row.created_at, row.id.clone()));
    let hook_id = &hook.id;
    let pages = walk_pages(
        4,
        |page| async move { s.list_deliveries(hook_id, &page).await },
        delivery_position,
    )
    .await;
    assert_eq!(
        pages.iter().map(Vec::len).collect::<Vec<_>>(),
        vec![4, 4, 2]
    );
    assert_eq!(pages.concat(), expected);
    assert_eq!(whole_log(s, &hook.id).await, expected);
    assert_eq!(whole_log(s, &neighbour.id).await, theirs);
    assert_eq!(
        store
            .list_deliveries(&hook.id, &first_page(0))
            .await
            .unwrap(),
        vec![]
    );

    let stored = stored_webhook(s, &hook.id).await;
    assert_eq!(
        (stored.last_delivery_at, stored.last_delivery_status),
        (Some(logged(10)), Some(0))
    );
    assert_eq!(
        stored.updated_at, hook.updated_at,
        "deliveries are no change"
    );
    let stored = stored_webhook(s, &neighbour.id).await;
    assert_eq!(
        (stored.last_delivery_at, stored.last_delivery_status),
        (Some(theirs[0].created_at), Some(204))
    );

    let unknown = WebhookId::new();
    let stray = delivery(&unknown, EventType::JobCompleted, 200, logged(11));
    assert!(!store.record_test_delivery(&stray).await.unwrap());
    assert_eq!(whole_log(s, &unknown).await, vec![]);
    assert_eq!(store.get_webhook(&unknown).await.unwrap(), None);
}

/// `purge_deliveries(before)` deletes the log rows created before `before` (every
/// webhook's) and counts them; rows at or after `before` stay, and the webhooks'
/// `lastDelivery*` are untouched. This is the suite's only purge, and the only behaviour with
/// rows before 2027 (see the module documentation).
pub async fn webhook_purge_deliveries_removes_old_rows(store: Arc<dyn TestStore>) {
    let s = &*store;
    let org = seed_organization(s, "Purged hooks").await;
    let hook = seed_webhook(s, &org, minutes(1), |_| {}).await;
    let other = seed_webhook(s, &org, minutes(2), |_| {}).await;
    let before = at("2026-06-01T00:00:00.000Z");
    let oldest = delivery(
        &hook.id,
        EventType::JobFailed,
        500,
        at("2026-01-10T08:00:00.000Z"),
    );
    let just_before = delivery(
        &other.id,
        EventType::JobFailed,
        0,
        at("2026-05-31T23:59:59.999Z"),
    );
    let at_the_limit = delivery(&hook.id, EventType::JobCompleted, 200, before);
    let recent = delivery(&other.id, EventType::JobCompleted, 204, logged(0));
    let newest = delivery(&hook.id, EventType::JobCancelled, 410, logged(1));
    for row in [&oldest, &just_before, &at_the_limit, &recent, &newest] {
        log_test_delivery(s, row).await;
    }
    let hook = stored_webhook(s, &hook.id).await;
    let other = stored_webhook(s, &other.id).await;

    let purged = store.purge_deliveries(before).await.unwrap();
    assert!(
        purged >= 2,
        "both old rows are purged and counted: {purged}"
    );
    assert_eq!(
        whole_log(s, &hook.id).await,
        vec![newest.clone(), at_the_limit.clone()]
    );
    assert_eq!(whole_log(s, &other.id).await, vec![recent.clone()]);
    assert_eq!(stored_webhook(s, &hook.id).await, hook);
    assert_eq!(stored_webhook(s, &other.id).await, other);

    store.purge_deliveries(before).await.unwrap();
    assert_eq!(
        whole_log(s, &hook.id).await,
        vec![newest, at_the_limit],
        "a second purge takes nothing of these"
    );
    assert_eq!(whole_log(s, &other.id).await, vec![recent]);
}

/// A listener hears [`QueueSignal::EventsWritten`] after a write that adds to the outbox an
/// event a webhook subscribes to: a cancellation and a finish.
pub async fn webhook_listen_hears_events_written(store: Arc<dyn TestStore>) {
    let s = &*store;
    let org = seed_organization(s, "Event listener").await;
    let site = seed_property(s, &org, minutes(0)).await;
    seed_webhook(s, &org, minutes(0), |_| {}).await;
    let mut listener = store.listen().await.unwrap();

    let pending = typed_job(&org, &site, minutes(1), &unique_job_type("events-written"));
    insert_counted(s, &pending).await;
    let cancelled = store.cancel_job(&pending.id, minutes(2)).await.unwrap();
    assert!(matches!(cancelled, CancelOutcome::Cancelled(_)));
    wait_for_signal(&mut *listener, &QueueSignal::EventsWritten).await;

    let running = seed_running_job(s, &org, &site, minutes(3)).await;
    assert_eq!(
        finish(s, &running.attempt, completed(), minutes(4)).await,
        Some(JobStatus::Completed)
    );
    wait_for_signal(&mut *listener, &QueueSignal::EventsWritten).await;
}

/// The delivery queue from events to outcomes:
///
/// - A fan-out (several at once, each taking at most its limit, until one takes nothing)
///   queues each event exactly once for each enabled webhook of the event's organization that
///   subscribes to its type: not for disabled webhooks, webhooks of other events or other
///   organizations' webhooks. Later fan-outs queue nothing more. A fan-out or a claim of 0
///   takes nothing. An event written while no enabled webhook of its organization subscribed
///   to its type had nobody to go to: no fan-out queues it, not even for a webhook that
///   subscribes before the fan-out runs.
/// - Disabling a webhook and deleting one drop their queued messages; turning a webhook on
///   again brings none back, nor queues the events that happened while it was off (and a
///   deleted webhook's record inserted again under its id finds no message of its own).
/// - Messages are due at the fan-out's `now`, not before. A claim (several at once) takes
///   each due message once, with its event, its webhook and its job as they are now,
///   attempt 1 and a token of its own; a claimed message is not claimed again before its
///   lease ends, and at the lease's end it is, as attempt 2 with a new token.
/// - `record_deliveries` answers per record, in order, whether it was written: an attempt
///   whose token is not the message's (an unknown token, a superseded one, an attempt already
///   recorded) writes nothing, not even its log row. A written record adds its log row and
///   sets the webhook's `lastDelivery*` (not `updatedAt`); `Done` removes the message,
///   `RetryAt(t)` makes it due at `t` and not before (as attempt 2), and `Disable` turns the
///   webhook off (not counted as a change: `updatedAt` stays) and drops its queued messages.
pub async fn webhook_delivery_queue_lifecycle(store: Arc<dyn TestStore>) {
    let s = &*store;
    let org = seed_organization(s, "Delivering").await;
    let other = seed_organization(s, "Delivering neighbour").await;
    let site = seed_property(s, &org, minutes(0)).await;
    let other_site = seed_property(s, &other, minutes(0)).await;

    let everything = seed_webhook(s, &org, minutes(1), |_| {}).await;
    let cancels = seed_webhook(s, &org, minutes(2), |hook| {
        hook.events = vec![EventType::JobCancelled];
    })
    .await;
    let failures = seed_webhook(s, &org, minutes(3), |hook| {
        hook.events = vec![EventType::JobFailed];
    })
    .await;
    let off = seed_webhook(s, &org, minutes(4), |hook| hook.enabled = false).await;
    let gone = seed_webhook(s, &org, minutes(5), |_| {}).await;
    let deleted = seed_webhook(s, &org, minutes(6), |_| {}).await;
    let turned_off = seed_webhook(s, &org, minutes(7), |_| {}).await;
    let neighbours = seed_webhook(s, &other, minutes(1), |_| {}).await;
    // An organization whose webhooks take no completion when its job completes, and one that
    // subscribes to everything once the event is written.
    let quiet = seed_organization(s, "Delivering, quietly").await;
    let quiet_site = seed_property(s, &quiet, minutes(0)).await;
    let quiet_cancels = seed_webhook(s, &quiet, minutes(1), |hook| {
        hook.events = vec![EventType::JobCancelled];
    })
    .await;
    let quiet_off = seed_webhook(s, &quiet, minutes(1), |hook| hook.enabled = false).await;
    let unheard = seed_job(s, &quiet, &quiet_site, minutes(13), JobStatus::Completed).await;
    let unheard_event = assert_single_event(
        s,
        &unheard,
        EventType::JobCompleted,
        seconds(minutes(13), 2),
    )
    .await;
    let quiet_late = seed_webhook(s, &quiet, minutes(14), |_| {}).await;
    let mine: HashSet<WebhookId> = [
        &everything,
        &cancels,
        &failures,
        &off,
        &gone,
        &deleted,
        &turned_off,
        &neighbours,
        &quiet_cancels,
        &quiet_off,
        &quiet_late,
    ]
    .into_iter()
    .map(|hook| hook.id.clone())
    .collect();

    // The events: written by the store's own transitions.
    let cancelled = seed_job(s, &org, &site, minutes(10), JobStatus::Cancelled).await;
    let done = seed_job(s, &org, &site, minutes(11), JobStatus::Completed).await;
    let theirs = seed_job(s, &other, &other_site, minutes(12), JobStatus::Failed).await;
    let cancelled_event = assert_single_event(
        s,
        &cancelled,
        EventType::JobCancelled,
        seconds(minutes(10), 2),
    )
    .await;
    let done_event =
        assert_single_event(s, &done, EventType::JobCompleted, seconds(minutes(11), 2)).await;
    let their_event =
        assert_single_event(s, &theirs, EventType::JobFailed, seconds(minutes(12), 2)).await;

    let fanned_at = at("2027-02-01T00:00:00.000Z");
    assert_eq!(store.fan_out_events(0, fanned_at).await.unwrap(), 0);
    fan_out_everything(&store, 3, fanned_at).await;
    assert!(store.delete_webhook(&deleted.id).await.unwrap());
    let turned_off = store
        .update_webhook(
            &turned_off.id,
            &WebhookChanges {
                enabled: Some(false),
                ..WebhookChanges::default()
            },
            seconds(fanned_at, -1),
        )
        .await
        .unwrap()
        .expect("the webhook exists");
    fan_out_everything(&store, 2, fanned_at).await;

    // Due at the fan-out's `now`, not before; a claim of 0 takes nothing.
    let lease = seconds(fanned_at, 60);
    assert_eq!(
        store.claim_deliveries(0, fanned_at, lease).await.unwrap(),
        vec![]
    );
    assert_eq!(
        pairs(&claim_mine(s, &mine, seconds(fanned_at, -1), lease).await),
        vec![]
    );
    let claimed: Vec<ClaimedDelivery> = run_concurrently(3, |_| {
        let store = Arc::clone(&store);
        let mine = mine.clone();
        async move { claim_mine(&*store, &mine, fanned_at, lease).await }
    })
    .await
    .concat();
    let mut expected = vec![
        (everything.id.clone(), cancelled_event.id.clone()),
        (everything.id.clone(), done_event.id.clone()),
        (cancels.id.clone(), cancelled_event.id.clone()),
        (gone.id.clone(), cancelled_event.id.clone()),
        (gone.id.clone(), done_event.id.clone()),
        (neighbours.id.clone(), their_event.id.clone()),
    ];
    expected.sort();
    assert_eq!(
        pairs(&claimed),
        expected,
        "each message is claimed once, and none of {}, which had no subscriber",
        unheard_event.id
    );
    let events: HashMap<EventId, _> = [&cancelled_event, &done_event, &their_event]
        .into_iter()
        .map(|event| (event.id.clone(), event.clone()))
        .collect();
    let tokens: HashSet<AttemptToken> = claimed.iter().map(|c| c.token).collect();
    assert_eq!(
        tokens.len(),
        claimed.len(),
        "every attempt has its own token"
    );
    for claim in &claimed {
        assert_eq!(claim.attempt, 1);
        assert_eq!(claim.event, events[&claim.event.id]);
        assert_eq!(claim.webhook, stored_webhook(s, &claim.webhook.id).await);
        let job_id = claim.event.job_id().expect("a job event");
        assert_eq!(claim.job, Some(stored_job(s, job_id).await));
    }
    let claim_of = |hook: &Webhook, event: &EventId| -> ClaimedDelivery {
        claimed
            .iter()
            .find(|c| c.webhook.id == hook.id && &c.event.id == event)
            .cloned()
            .expect("claimed")
    };
    let everything_cancelled = claim_of(&everything, &cancelled_event.id);
    let everything_done = claim_of(&everything, &done_event.id);
    let cancels_cancelled = claim_of(&cancels, &cancelled_event.id);
    let gone_cancelled = claim_of(&gone, &cancelled_event.id);
    let gone_done = claim_of(&gone, &done_event.id);
    let neighbours_failed = claim_of(&neighbours, &their_event.id);

    // Leased: not claimed again while the lease lasts.
    assert_eq!(
        pairs(&claim_mine(s, &mine, seconds(fanned_at, 30), seconds(fanned_at, 90)).await),
        vec![]
    );

    let retry_at = seconds(fanned_at, 600);
    let answers = store
        .record_deliveries(&[
            outcome(
                &everything_cancelled,
                200,
                seconds(fanned_at, 1),
                NextStep::Done,
            ),
            outcome(
                &everything_done,
                500,
                seconds(fanned_at, 2),
                NextStep::RetryAt(retry_at),
            ),
            outcome(
                &gone_cancelled,
                410,
                seconds(fanned_at, 3),
                NextStep::Disable,
            ),
            outcome(
                &neighbours_failed,
                204,
                seconds(fanned_at, 4),
                NextStep::Done,
            ),
            DeliveryRecord {
                token: AttemptToken::new(),
                ..outcome(
                    &cancels_cancelled,
                    200,
                    seconds(fanned_at, 5),
                    NextStep::Done,
                )
            },
        ])
        .await
        .unwrap();
    assert_eq!(answers, vec![true, true, true, true, false]);
    // The disable dropped the webhook's other message; recorded attempts are over.
    for stale in [
        outcome(&gone_done, 200, seconds(fanned_at, 6), NextStep::Done),
        outcome(
            &everything_cancelled,
            200,
            seconds(fanned_at, 7),
            NextStep::Done,
        ),
        outcome(&everything_done, 200, seconds(fanned_at, 8), NextStep::Done),
    ] {
        assert!(!record_one(s, stale.clone()).await, "{stale:?}");
    }

    let log = whole_log(s, &everything.id).await;
    assert_eq!(
        log.iter()
            .map(|row| (row.created_at, row.status_code, row.event))
            .collect::<Vec<_>>(),
        vec![
            (seconds(fanned_at, 2), 500, EventType::JobCompleted),
            (seconds(fanned_at, 1), 200, EventType::JobCancelled),
        ]
    );
    let stored = stored_webhook(s, &everything.id).await;
    assert_eq!(
        stored,
        Webhook {
            last_delivery_at: Some(seconds(fanned_at, 2)),
            last_delivery_status: Some(500),
            ..everything.clone()
        }
    );
    let stored = stored_webhook(s, &gone.id).await;
    assert_eq!(
        stored,
        Webhook {
            enabled: false,
            last_delivery_at: Some(seconds(fanned_at, 3)),
            last_delivery_status: Some(410),
            ..gone.clone()
        }
    );
    assert_eq!(whole_log(s, &gone.id).await.len(), 1);
    assert_eq!(whole_log(s, &neighbours.id).await.len(), 1);
    assert_eq!(whole_log(s, &cancels.id).await, vec![]);
    assert_eq!(stored_webhook(s, &cancels.id).await, cancels);

    // The unrecorded attempt's lease ends: claimed again, as attempt 2.
    assert_eq!(
        pairs(&claim_mine(s, &mine, seconds(fanned_at, 30), seconds(fanned_at, 90)).await),
        vec![]
    );
    assert_eq!(
        pairs(&claim_mine(s, &mine, seconds(lease, -1), seconds(fanned_at, 90)).await),
        vec![]
    );
    let again = claim_mine(s, &mine, lease, seconds(fanned_at, 120)).await;
    assert_eq!(
        pairs(&again),
        vec![(cancels.id.clone(), cancelled_event.id.clone())]
    );
    assert_eq!(again[0].attempt, 2);
    assert_ne!(again[0].token, cancels_cancelled.token);
    assert!(
        !record_one(
            s,
            outcome(
                &cancels_cancelled,
                200,
                seconds(fanned_at, 61),
                NextStep::Done
            )
        )
        .await,
        "the superseded attempt is refused"
    );
    assert_eq!(whole_log(s, &cancels.id).await, vec![]);
    assert!(
        record_one(
            s,
            outcome(&again[0], 200, seconds(fanned_at, 62), NextStep::Done)
        )
        .await
    );
    assert_eq!(whole_log(s, &cancels.id).await.len(), 1);

    // The retry is due at its time, not before.
    assert_eq!(
        pairs(&claim_mine(s, &mine, seconds(retry_at, -1), seconds(retry_at, 60)).await),
        vec![]
    );
    let retried = claim_mine(s, &mine, retry_at, seconds(retry_at, 60)).await;
    assert_eq!(
        pairs(&retried),
        vec![(everything.id.clone(), done_event.id.clone())]
    );
    assert_eq!(retried[0].attempt, 2);
    assert_eq!(
        retried[0].webhook,
        stored_webhook(s, &everything.id).await,
        "the webhook as it is now"
    );
    assert!(
        record_one(
            s,
            outcome(&retried[0], 204, seconds(retry_at, 1), NextStep::Done)
        )
        .await
    );
    assert_eq!(whole_log(s, &everything.id).await.len(), 3);

    // Nothing is left: dropped messages do not come back when webhooks are turned on again
    // (or inserted again), and a later fan-out queues nothing more.
    store
        .insert_webhook(&deleted, NO_WEBHOOK_LIMIT)
        .await
        .unwrap();
    for hook in [&off, &turned_off, &gone] {
        let on = WebhookChanges {
            enabled: Some(true),
            ..WebhookChanges::default()
        };
        let updated = store
            .update_webhook(&hook.id, &on, seconds(retry_at, 2))
            .await
            .unwrap();
        assert!(updated.is_some_and(|hook| hook.enabled));
    }
    fan_out_everything(&store, 1, seconds(retry_at, 3)).await;
    let far = at("2027-12-31T00:00:00.000Z");
    assert_eq!(
        pairs(&claim_mine(s, &mine, far, seconds(far, 60)).await),
        vec![]
    );
    assert_eq!(whole_log(s, &failures.id).await, vec![]);
    assert_eq!(whole_log(s, &off.id).await, vec![]);
    assert_eq!(whole_log(s, &turned_off.id).await, vec![]);
    assert_eq!(whole_log(s, &deleted.id).await, vec![]);
}
