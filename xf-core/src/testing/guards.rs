//! Behaviours of the request guards: rate-limit counters, idempotency records and their
//! purge.

use std::sync::Arc;

use chrono::Duration;

use super::{at, idempotency_request, millis, rate_bucket, run_concurrently, unique, TestStore};
use crate::store::{
    IdempotencyClaim, IdempotencyRequest, RateBucket, RateOutcome, Store, StoredResponse,
};
use crate::time::Timestamp;

async fn hit(store: &dyn Store, buckets: &[RateBucket]) -> RateOutcome {
    store
        .hit_rate_limits(buckets)
        .await
        .expect("hit rate limits")
}

/// The outcome of a hit that counted `counts` and found the buckets at `exceeded` full.
fn outcome(counts: &[u64], exceeded: &[usize]) -> RateOutcome {
    RateOutcome {
        counts: counts.to_vec(),
        exceeded: exceeded.to_vec(),
    }
}

pub(super) async fn claim_key(
    store: &dyn Store,
    scope: &str,
    fingerprint: &str,
    now: Timestamp,
) -> IdempotencyClaim {
    store
        .claim_idempotency_key(&idempotency_request(scope, fingerprint, now))
        .await
        .expect("claim idempotency key")
}

/// `hit_rate_limits` increments only the buckets with `consume`, reads the others, and
/// reports every bucket's count in the order given.
pub async fn rate_limit_consumes_only_consume_buckets(store: Arc<dyn TestStore>) {
    let window = at("2026-11-01T10:00:00.000Z");
    let a = unique("key:a:read");
    let b = unique("key:b:write");
    let c = unique("org:c:daily");
    let s = &*store;
    let buckets = [
        rate_bucket(&a, window, 5, true),
        rate_bucket(&b, window, 5, false),
        rate_bucket(&c, window, 5, true),
    ];
    assert_eq!(hit(s, &buckets).await, outcome(&[1, 0, 1], &[]));
    assert_eq!(hit(s, &buckets).await, outcome(&[2, 0, 2], &[]));
    assert_eq!(
        hit(s, &[rate_bucket(&b, window, 5, true)]).await,
        outcome(&[1], &[])
    );
    let reversed = [
        rate_bucket(&c, window, 5, false),
        rate_bucket(&b, window, 5, true),
        rate_bucket(&a, window, 5, false),
    ];
    assert_eq!(hit(s, &reversed).await, outcome(&[2, 2, 2], &[]));
    assert_eq!(hit(s, &buckets).await, outcome(&[3, 2, 3], &[]));
}

/// At the limit, `hit_rate_limits` refuses all-or-nothing: `exceeded` lists every consumed
/// bucket at its limit and no bucket is counted. A bucket only read does not refuse, even at
/// its limit.
pub async fn rate_limit_refuses_at_limit_all_or_nothing(store: Arc<dyn TestStore>) {
    let window = at("2026-11-01T11:00:00.000Z");
    let a = unique("key:a:write");
    let b = unique("org:b:daily");
    let s = &*store;
    let both = [
        rate_bucket(&a, window, 3, true),
        rate_bucket(&b, window, 2, true),
    ];
    assert_eq!(hit(s, &both).await.counts, vec![1, 1]);
    assert_eq!(hit(s, &both).await.counts, vec![2, 2]);
    assert_eq!(hit(s, &both).await, outcome(&[2, 2], &[1]));
    // `a` was not counted by the refused call: it still has room for exactly one.
    assert_eq!(
        hit(s, &[rate_bucket(&a, window, 3, true)]).await,
        outcome(&[3], &[])
    );
    assert_eq!(hit(s, &both).await, outcome(&[3, 2], &[0, 1]));
    // Only read, a full bucket does not refuse the others.
    let d = unique("key:d:read");
    assert_eq!(
        hit(
            s,
            &[
                rate_bucket(&d, window, 10, true),
                rate_bucket(&a, window, 3, false),
                rate_bucket(&b, window, 2, false),
            ]
        )
        .await,
        outcome(&[1, 3, 2], &[])
    );
    // A raised limit lets the bucket count again.
    assert_eq!(
        hit(s, &[rate_bucket(&b, window, 3, true)]).await,
        outcome(&[3], &[])
    );
    // A limit of zero refuses at once.
    let zero = unique("key:zero:write");
    assert_eq!(
        hit(s, &[rate_bucket(&zero, window, 0, true)]).await,
        outcome(&[0], &[0])
    );
}

/// Each (name, window start) is its own counter: a new window starts from zero, the old
/// window keeps its count, and another name in the same window is separate.
pub async fn rate_limit_windows_are_separate(store: Arc<dyn TestStore>) {
    let name = unique("key:x:read");
    let first_window = at("2026-11-01T12:00:00.000Z");
    let next_window = at("2026-11-01T13:00:00.000Z");
    let s = &*store;
    let in_first = [rate_bucket(&name, first_window, 2, true)];
    assert_eq!(hit(s, &in_first).await.counts, vec![1]);
    assert_eq!(hit(s, &in_first).await.counts, vec![2]);
    assert_eq!(hit(s, &in_first).await.exceeded, vec![0]);

    assert_eq!(
        hit(s, &[rate_bucket(&name, next_window, 2, true)]).await,
        outcome(&[1], &[])
    );
    assert_eq!(
        hit(s, &[rate_bucket(&name, first_window, 2, false)])
            .await
            .counts,
        vec![2]
    );
    assert_eq!(
        hit(
            s,
            &[rate_bucket(&unique("key:y:read"), first_window, 2, true)]
        )
        .await
        .counts,
        vec![1]
    );
    assert_eq!(
        hit(s, &[rate_bucket(&name, next_window, 2, false)])
            .await
            .counts,
        vec![1]
    );
}

/// Of 50 simultaneous hits on a bucket with limit 20, exactly 20 are counted (seeing counts 1
/// to 20, each once) and 30 are refused at 20.
pub async fn rate_limit_concurrent_hits_respect_limit(store: Arc<dyn TestStore>) {
    let name = unique("key:busy:read");
    let window = at("2026-11-01T14:00:00.000Z");
    let outcomes = run_concurrently(50, |_| {
        let store = Arc::clone(&store);
        let bucket = rate_bucket(&name, window, 20, true);
        async move { store.hit_rate_limits(&[bucket]).await.unwrap() }
    })
    .await;
    let mut accepted: Vec<u64> = outcomes
        .iter()
        .filter(|o| o.exceeded.is_empty())
        .map(|o| o.counts[0])
        .collect();
    accepted.sort_unstable();
    assert_eq!(accepted, (1..=20).collect::<Vec<u64>>());
    let refused: Vec<&RateOutcome> = outcomes.iter().filter(|o| !o.exceeded.is_empty()).collect();
    assert_eq!(refused.len(), 30);
    assert!(refused
        .iter()
        .all(|o| o.counts == vec![20] && o.exceeded == vec![0]));
    assert_eq!(
        hit(&*store, &[rate_bucket(&name, window, 20, false)])
            .await
            .counts,
        vec![20]
    );
}

/// Of 40 simultaneous requests that each consume a bucket of their own (limit 100) and one
/// shared bucket (limit 10), and peek at a third, exactly 10 are counted, each in both of its
/// buckets; the 30 refused ones are counted nowhere (their own buckets stay at 0); every
/// request sees the peeked bucket's count unchanged. (A store that counts simultaneous
/// requests together must keep each one's all-or-nothing rule.)
pub async fn rate_limit_concurrent_requests_are_all_or_nothing(store: Arc<dyn TestStore>) {
    let shared = unique("org:busy:write");
    let peeked = unique("key:busy:read");
    let window = at("2026-11-01T15:00:00.000Z");
    let outcomes = run_concurrently(40, |n| {
        let store = Arc::clone(&store);
        let own = rate_bucket(&format!("{shared}:own{n}"), window, 100, true);
        let common = rate_bucket(&shared, window, 10, true);
        let look = rate_bucket(&peeked, window, 5, false);
        async move {
            let outcome = store.hit_rate_limits(&[own, common, look]).await.unwrap();
            (n, outcome)
        }
    })
    .await;
    let accepted: Vec<&(usize, RateOutcome)> = outcomes
        .iter()
        .filter(|(_, o)| o.exceeded.is_empty())
        .collect();
    assert_eq!(accepted.len(), 10);
    let mut shared_counts: Vec<u64> = accepted.iter().map(|(_, o)| o.counts[1]).collect();
    shared_counts.sort_unstable();
    assert_eq!(shared_counts, (1..=10).collect::<Vec<u64>>());
    assert!(accepted
        .iter()
        .all(|(_, o)| o.counts[0] == 1 && o.counts[2] == 0));
    for (n, outcome) in outcomes.iter().filter(|(_, o)| !o.exceeded.is_empty()) {
        assert_eq!(outcome.exceeded, vec![1], "request {n}");
        assert_eq!(outcome.counts, vec![0, 10, 0], "request {n}");
    }
}

/// The first claim of a scope is `Acquired`; while unfinished, the same fingerprint is
/// `InUse` and another fingerprint `Mismatch`. Scopes are independent.
pub async fn idempotency_claim_in_use_and_mismatch(store: Arc<dyn TestStore>) {
    let scope = unique("org:live:order-1");
    let other_scope = unique("org:live:order-2");
    let t0 = at("2026-11-01T15:00:00.000Z");
    let s = &*store;
    assert_eq!(
        claim_key(s, &scope, "fp-a", t0).await,
        IdempotencyClaim::Acquired
    );
    assert_eq!(
        claim_key(s, &scope, "fp-a", millis(t0, 1_000)).await,
        IdempotencyClaim::InUse
    );
    assert_eq!(
        claim_key(s, &scope, "fp-b", millis(t0, 2_000)).await,
        IdempotencyClaim::Mismatch
    );
    assert_eq!(
        claim_key(s, &scope, "fp-a", millis(t0, 3_000)).await,
        IdempotencyClaim::InUse
    );
    assert_eq!(
        claim_key(s, &other_scope, "fp-a", t0).await,
        IdempotencyClaim::Acquired
    );
}

/// After `complete_idempotency_key`, claims with the same fingerprint replay the stored
/// status and body (again and again, even long after the claim went stale) and another
/// fingerprint is `Mismatch`. Completing with a fingerprint that does not own the scope does
/// nothing.
pub async fn idempotency_complete_then_replay(store: Arc<dyn TestStore>) {
    let scope = unique("org:live:create-property");
    let t0 = at("2026-11-01T16:00:00.000Z");
    let s = &*store;
    let response = StoredResponse {
        status: 201,
        body: r#"{"property":{"id":"prop_1","url":"https://example.com"}}"#.to_owned(),
    };
    assert_eq!(
        claim_key(s, &scope, "fp-a", t0).await,
        IdempotencyClaim::Acquired
    );
    store
        .complete_idempotency_key(&scope, "fp-a", &response)
        .await
        .unwrap();
    assert_eq!(
        claim_key(s, &scope, "fp-a", millis(t0, 5_000)).await,
        IdempotencyClaim::Replay(response.clone())
    );
    assert_eq!(
        claim_key(s, &scope, "fp-a", millis(t0, 6_000)).await,
        IdempotencyClaim::Replay(response.clone())
    );
    assert_eq!(
        claim_key(s, &scope, "fp-a", t0.plus(Duration::hours(23))).await,
        IdempotencyClaim::Replay(response.clone())
    );
    assert_eq!(
        claim_key(s, &scope, "fp-b", t0.plus(Duration::hours(1))).await,
        IdempotencyClaim::Mismatch
    );

    let other_scope = unique("org:live:queue-scan");
    assert_eq!(
        claim_key(s, &other_scope, "fp-x", t0).await,
        IdempotencyClaim::Acquired
    );
    store
        .complete_idempotency_key(&other_scope, "fp-y", &response)
        .await
        .unwrap();
    assert_eq!(
        claim_key(s, &other_scope, "fp-x", millis(t0, 1_000)).await,
        IdempotencyClaim::InUse
    );
}

/// `release_idempotency_key` drops an unfinished claim so the next claim, with any
/// fingerprint, is `Acquired`. It does nothing for another fingerprint or for a completed
/// record.
pub async fn idempotency_release_frees_key(store: Arc<dyn TestStore>) {
    let scope = unique("org:test:batch");
    let t0 = at("2026-11-01T17:00:00.000Z");
    let s = &*store;
    assert_eq!(
        claim_key(s, &scope, "fp-a", t0).await,
        IdempotencyClaim::Acquired
    );
    store.release_idempotency_key(&scope, "fp-b").await.unwrap();
    assert_eq!(
        claim_key(s, &scope, "fp-a", millis(t0, 1_000)).await,
        IdempotencyClaim::InUse
    );

    store.release_idempotency_key(&scope, "fp-a").await.unwrap();
    assert_eq!(
        claim_key(s, &scope, "fp-b", millis(t0, 2_000)).await,
        IdempotencyClaim::Acquired
    );
    assert_eq!(
        claim_key(s, &scope, "fp-a", millis(t0, 3_000)).await,
        IdempotencyClaim::Mismatch
    );

    let response = StoredResponse {
        status: 202,
        body: r#"{"results":[]}"#.to_owned(),
    };
    store
        .complete_idempotency_key(&scope, "fp-b", &response)
        .await
        .unwrap();
    store.release_idempotency_key(&scope, "fp-b").await.unwrap();
    assert_eq!(
        claim_key(s, &scope, "fp-b", millis(t0, 4_000)).await,
        IdempotencyClaim::Replay(response)
    );

    // Releasing a scope that was never claimed is harmless.
    store
        .release_idempotency_key(&unique("org:test:never"), "fp-a")
        .await
        .unwrap();
}

/// An unfinished claim made before `stale_before` (exclusive) is taken over by a claim with
/// the same fingerprint, which is `Acquired` and renews the claim; a different fingerprint is
/// still `Mismatch`.
pub async fn idempotency_stale_claim_taken_over(store: Arc<dyn TestStore>) {
    let scope = unique("org:live:stale");
    let t0 = at("2026-11-01T18:00:00.000Z");
    let s = &*store;
    assert_eq!(
        claim_key(s, &scope, "fp-a", t0).await,
        IdempotencyClaim::Acquired
    );
    // stale_before = now - 60 s: t0 - 1 ms, then exactly t0: not stale yet.
    assert_eq!(
        claim_key(s, &scope, "fp-a", millis(t0, 59_999)).await,
        IdempotencyClaim::InUse
    );
    assert_eq!(
        claim_key(s, &scope, "fp-a", millis(t0, 60_000)).await,
        IdempotencyClaim::InUse
    );
    assert_eq!(
        claim_key(s, &scope, "fp-b", millis(t0, 61_000)).await,
        IdempotencyClaim::Mismatch
    );
    // stale_before = t0 + 1 s: the claim of t0 is stale and taken over.
    assert_eq!(
        claim_key(s, &scope, "fp-a", millis(t0, 61_000)).await,
        IdempotencyClaim::Acquired
    );
    // The takeover renewed the claim: it is in use until 60 s after the takeover.
    assert_eq!(
        claim_key(s, &scope, "fp-a", millis(t0, 62_000)).await,
        IdempotencyClaim::InUse
    );
    assert_eq!(
        claim_key(s, &scope, "fp-a", millis(t0, 121_000)).await,
        IdempotencyClaim::InUse
    );
    assert_eq!(
        claim_key(s, &scope, "fp-a", millis(t0, 122_000)).await,
        IdempotencyClaim::Acquired
    );
}

/// A record created before `expired_before` is replaced by the next claim, whatever its
/// fingerprint or state: the claim is `Acquired` and the new fingerprint owns the scope.
pub async fn idempotency_expired_record_replaced(store: Arc<dyn TestStore>) {
    let scope = unique("org:live:expiring");
    let t0 = at("2026-11-02T00:00:00.000Z");
    let s = &*store;
    let response = StoredResponse {
        status: 202,
        body: r#"{"job":{"id":"job_1"}}"#.to_owned(),
    };
    assert_eq!(
        claim_key(s, &scope, "fp-a", t0).await,
        IdempotencyClaim::Acquired
    );
    store
        .complete_idempotency_key(&scope, "fp-a", &response)
        .await
        .unwrap();
    // expired_before = now - 24 h = t0: created exactly then, not expired yet.
    assert_eq!(
        claim_key(s, &scope, "fp-b", t0.plus(Duration::hours(24))).await,
        IdempotencyClaim::Mismatch
    );
    // expired_before = t0 + 1 ms: expired, replaced by the new fingerprint's claim.
    let later = millis(t0.plus(Duration::hours(24)), 1);
    assert_eq!(
        claim_key(s, &scope, "fp-b", later).await,
        IdempotencyClaim::Acquired
    );
    assert_eq!(
        claim_key(s, &scope, "fp-b", millis(later, 1_000)).await,
        IdempotencyClaim::InUse
    );
    assert_eq!(
        claim_key(s, &scope, "fp-a", millis(later, 2_000)).await,
        IdempotencyClaim::Mismatch
    );

    // An expired unfinished claim is replaced too, by the same fingerprint.
    let unfinished = unique("org:live:expiring-unfinished");
    assert_eq!(
        claim_key(s, &unfinished, "fp-a", t0).await,
        IdempotencyClaim::Acquired
    );
    assert_eq!(
        claim_key(s, &unfinished, "fp-a", t0.plus(Duration::hours(25))).await,
        IdempotencyClaim::Acquired
    );
    assert_eq!(
        claim_key(
            s,
            &unfinished,
            "fp-a",
            t0.plus(Duration::hours(25)).plus(Duration::seconds(1))
        )
        .await,
        IdempotencyClaim::InUse
    );
}

/// Of 30 simultaneous first claims of one scope and fingerprint, exactly one is `Acquired`
/// and the rest are `InUse`.
pub async fn idempotency_concurrent_claims_single_winner(store: Arc<dyn TestStore>) {
    let scope = unique("org:live:race");
    let t0 = at("2026-11-01T19:00:00.000Z");
    let claims = run_concurrently(30, |n| {
        let store = Arc::clone(&store);
        let request = idempotency_request(&scope, "fp-race", millis(t0, n as i64));
        async move { store.claim_idempotency_key(&request).await.unwrap() }
    })
    .await;
    let acquired = claims
        .iter()
        .filter(|c| **c == IdempotencyClaim::Acquired)
        .count();
    let in_use = claims
        .iter()
        .filter(|c| **c == IdempotencyClaim::InUse)
        .count();
    assert_eq!((acquired, in_use), (1, 29), "{claims:?}");
}

/// Many claims and completions at once, over several scopes, each decided as alone (a store
/// that runs them in batches must keep each one's outcome): of three simultaneous first claims
/// of a scope with three fingerprints one is `Acquired` and two are `Mismatch`; on a completed
/// record the same fingerprint replays its own response and the others are `Mismatch`; and
/// responses completed at once replay, each on its own scope.
pub async fn idempotency_simultaneous_claims_over_many_scopes(store: Arc<dyn TestStore>) {
    const FRESH: usize = 10;
    const DONE: usize = 10;
    let t0 = at("2026-11-02T08:00:00.000Z");
    let scopes: Arc<Vec<String>> = Arc::new(
        (0..FRESH + DONE)
            .map(|i| unique(&format!("org:live:many{i}")))
            .collect(),
    );
    let response = |i: usize, fingerprint: &str| StoredResponse {
        status: 201,
        body: format!("{{\"scope\":{i},\"by\":\"{fingerprint}\"}}"),
    };
    for (i, scope) in scopes.iter().enumerate().skip(FRESH) {
        assert_eq!(
            claim_key(&*store, scope, "done", t0).await,
            IdempotencyClaim::Acquired
        );
        store
            .complete_idempotency_key(scope, "done", &response(i, "done"))
            .await
            .unwrap();
    }

    let fingerprints = ["fp-a", "fp-b", "done"];
    let claims = run_concurrently(scopes.len() * fingerprints.len(), |n| {
        let (store, scopes) = (Arc::clone(&store), Arc::clone(&scopes));
        let (i, fingerprint) = (n / fingerprints.len(), fingerprints[n % fingerprints.len()]);
        let request = idempotency_request(&scopes[i], fingerprint, millis(t0, 1_000));
        async move {
            let claim = store.claim_idempotency_key(&request).await.unwrap();
            (i, fingerprint, claim)
        }
    })
    .await;
    let mut winners = vec![None; FRESH];
    for (i, fingerprint, claim) in &claims {
        if *i < FRESH {
            match claim {
                IdempotencyClaim::Acquired => {
                    assert!(winners[*i].is_none(), "two claims of scope {i} acquired");
                    winners[*i] = Some(*fingerprint);
                }
                other => assert_eq!(*other, IdempotencyClaim::Mismatch, "scope {i}"),
            }
        } else if *fingerprint == "done" {
            assert_eq!(
                *claim,
                IdempotencyClaim::Replay(response(*i, "done")),
                "scope {i}"
            );
        } else {
            assert_eq!(*claim, IdempotencyClaim::Mismatch, "scope {i}");
        }
    }
    let winners: Arc<Vec<&str>> = Arc::new(
        winners
            .into_iter()
            .enumerate()
            .map(|(i, winner)| winner.unwrap_or_else(|| panic!("no claim of scope {i} won")))
            .collect(),
    );

    run_concurrently(FRESH, |i| {
        let (store, scopes, winners) = (
            Arc::clone(&store),
            Arc::clone(&scopes),
            Arc::clone(&winners),
        );
        async move {
            store
                .complete_idempotency_key(&scopes[i], winners[i], &response(i, winners[i]))
                .await
                .unwrap();
        }
    })
    .await;
    let replays = run_concurrently(FRESH, |i| {
        let (store, scopes, winners) = (
            Arc::clone(&store),
            Arc::clone(&scopes),
            Arc::clone(&winners),
        );
        let request = idempotency_request(&scopes[i], winners[i], millis(t0, 2_000));
        async move { (i, store.claim_idempotency_key(&request).await.unwrap()) }
    })
    .await;
    for (i, claim) in replays {
        assert_eq!(
            claim,
            IdempotencyClaim::Replay(response(i, winners[i])),
            "scope {i}"
        );
    }
}

/// `purge_expired` deletes rate-limit windows starting before `windows_before` and
/// idempotency records created before `idempotency_before` (both exclusive), keeps the rest,
/// and returns how many rows went.
///
/// Unlike every other behaviour it must count rows it did not create, so it works before
/// 2000-01-01, where nothing else in the suite writes: its exact count holds as long as no
/// one else writes rate windows or idempotency records dated before 2000 to the same store
/// at the same time.
pub async fn purge_expired_removes_old_rows(store: Arc<dyn TestStore>) {
    let cutoff = at("2000-01-01T00:00:00.000Z");
    let s = &*store;
    let a = unique("purge:a");
    let b = unique("purge:b");
    let c = unique("purge:c");
    let old_window = at("1990-01-01T00:00:00.000Z");
    let older_window = at("1991-06-01T05:00:00.000Z");
    let last_old_window = at("1999-12-31T23:00:00.000Z");
    // Three old windows (one of them hit twice) and one at the cutoff.
    hit(s, &[rate_bucket(&a, old_window, 10, true)]).await;
    hit(s, &[rate_bucket(&a, old_window, 10, true)]).await;
    hit(s, &[rate_bucket(&a, older_window, 10, true)]).await;
    hit(s, &[rate_bucket(&b, last_old_window, 10, true)]).await;
    hit(s, &[rate_bucket(&c, cutoff, 10, true)]).await;

    // One idempotency record just before the cutoff and one at it.
    let old_scope = unique("purge:old");
    let kept_scope = unique("purge:kept");
    let old_time = millis(cutoff, -1);
    assert_eq!(
        claim_key(s, &old_scope, "fp", old_time).await,
        IdempotencyClaim::Acquired
    );
    assert_eq!(
        claim_key(s, &kept_scope, "fp", cutoff).await,
        IdempotencyClaim::Acquired
    );

    assert_eq!(store.purge_expired(cutoff, cutoff).await.unwrap(), 4);

    let peek = |name: &str, window| [rate_bucket(name, window, 10, false)];
    assert_eq!(hit(s, &peek(&a, old_window)).await.counts, vec![0]);
    assert_eq!(hit(s, &peek(&a, older_window)).await.counts, vec![0]);
    assert_eq!(hit(s, &peek(&b, last_old_window)).await.counts, vec![0]);
    assert_eq!(hit(s, &peek(&c, cutoff)).await.counts, vec![1]);

    // Neither claim is stale or expired by these requests' own bounds, so only a purged
    // record can be acquired again.
    let request = |scope: &str| IdempotencyRequest {
        scope: scope.to_owned(),
        fingerprint: "fp".to_owned(),
        now: millis(cutoff, 1),
        expired_before: at("1999-01-01T00:00:00.000Z"),
        stale_before: at("1999-12-31T23:00:00.000Z"),
    };
    assert_eq!(
        store
            .claim_idempotency_key(&request(&old_scope))
            .await
            .unwrap(),
        IdempotencyClaim::Acquired
    );
    assert_eq!(
        store
            .claim_idempotency_key(&request(&kept_scope))
            .await
            .unwrap(),
        IdempotencyClaim::InUse
    );

    // Nothing older is left: purging again removes nothing but the re-acquired record, which
    // was created after the cutoff and stays.
    assert_eq!(store.purge_expired(cutoff, cutoff).await.unwrap(), 0);
}

/// A connect state is claimed once: the first claim is `true`, every later one `false`, and of
/// simultaneous claims exactly one wins. Once expired it is forgotten, and a claim after that
/// is `true` again (the state itself has expired by then, and is refused before the claim).
pub async fn connect_state_claimed_once(store: Arc<dyn TestStore>) {
    let id = unique("state");
    let now = at("2026-11-10T10:00:00Z");
    let expires = at("2026-11-10T10:10:00Z");
    assert_eq!(store.claim_connect_state(&id, expires, now).await, Ok(true));
    assert_eq!(
        store.claim_connect_state(&id, expires, now).await,
        Ok(false)
    );
    let later = at("2026-11-10T10:09:59Z");
    assert_eq!(
        store.claim_connect_state(&id, expires, later).await,
        Ok(false)
    );

    let contested = unique("state");
    let winners = run_concurrently(8, |_| {
        let store = Arc::clone(&store);
        let contested = contested.clone();
        async move {
            store
                .claim_connect_state(&contested, expires, now)
                .await
                .expect("claim")
        }
    })
    .await;
    assert_eq!(winners.iter().filter(|won| **won).count(), 1, "{winners:?}");

    let after_expiry = at("2026-11-10T10:10:01Z");
    let other = unique("state");
    assert_eq!(
        store
            .claim_connect_state(&other, at("2026-11-10T10:20:00Z"), after_expiry)
            .await,
        Ok(true)
    );
    assert_eq!(
        store
            .claim_connect_state(&id, at("2026-11-10T10:20:00Z"), after_expiry)
            .await,
        Ok(true),
        "an expired id is forgotten"
    );
}
