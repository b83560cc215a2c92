//! Behaviours of properties.

use std::sync::Arc;

use super::guards::claim_key;
use super::{
    at, first_page, millis, minutes, property, run_concurrently, seed_organization, seed_property,
    sort_newest_first, unique, unique_url, walk_pages, TestStore,
};
use crate::error::StoreError;
use crate::ids::PropertyId;
use crate::model::Property;
use crate::store::{After, IdempotencyClaim, KeptResponse, PageRequest, StoredResponse};

fn property_position(property: &Property) -> After {
    After {
        created_at: property.created_at,
        id: property.id.to_string(),
    }
}

/// An inserted property reads back equal from any organization's point of view; an unknown id
/// is `None`.
pub async fn property_insert_and_get(store: Arc<dyn TestStore>) {
    let org = seed_organization(&*store, "Sites").await;
    let mut site = property(
        &org.id,
        "https://shop.example.com",
        at("2026-11-03T04:05:06.789Z"),
    );
    site.name = "My shop".to_owned();
    site.verified = true;
    site.gsc_site_url = Some("sc-domain:example.com".to_owned());
    store.insert_property(&site).await.unwrap();

    assert_eq!(store.get_property(&site.id).await.unwrap(), Some(site));
    assert_eq!(store.get_property(&PropertyId::new()).await.unwrap(), None);
}

/// `insert_property_keeping` inserts the property and keeps the response for the claiming
/// fingerprint: the next claim replays it. When the insert fails (the URL is taken), nothing is
/// kept: the claim stays unfinished (`InUse`), for the caller to complete with the failure. A
/// record of another fingerprint is left as it is, and the property still goes in.
pub async fn property_insert_keeping_keeps_the_answer_with_it(store: Arc<dyn TestStore>) {
    let org = seed_organization(&*store, "Kept").await;
    let t0 = at("2026-11-05T10:00:00.000Z");
    let kept = |scope: &str, fingerprint: &str, body: &str| KeptResponse {
        scope: scope.to_owned(),
        fingerprint: fingerprint.to_owned(),
        response: StoredResponse {
            status: 201,
            body: body.to_owned(),
        },
    };
    let s = &*store;

    let scope = unique("org:live:kept");
    assert_eq!(
        claim_key(s, &scope, "fp-a", t0).await,
        IdempotencyClaim::Acquired
    );
    let site = property(&org.id, &unique_url(), t0);
    let answer = kept(&scope, "fp-a", r#"{"data":{"property":{}}}"#);
    store.insert_property_keeping(&site, &answer).await.unwrap();
    assert_eq!(
        store.get_property(&site.id).await.unwrap(),
        Some(site.clone())
    );
    assert_eq!(
        claim_key(s, &scope, "fp-a", millis(t0, 60_000)).await,
        IdempotencyClaim::Replay(answer.response.clone())
    );

    let failing = unique("org:live:kept-duplicate");
    assert_eq!(
        claim_key(s, &failing, "fp-b", t0).await,
        IdempotencyClaim::Acquired
    );
    let mut twin = property(&org.id, &site.url, t0);
    twin.id = PropertyId::new();
    assert!(matches!(
        store
            .insert_property_keeping(&twin, &kept(&failing, "fp-b", "{}"))
            .await,
        Err(StoreError::Duplicate(_))
    ));
    assert_eq!(store.get_property(&twin.id).await.unwrap(), None);
    assert_eq!(
        claim_key(s, &failing, "fp-b", millis(t0, 1_000)).await,
        IdempotencyClaim::InUse
    );

    let other = unique("org:live:kept-other");
    assert_eq!(
        claim_key(s, &other, "fp-c", t0).await,
        IdempotencyClaim::Acquired
    );
    let third = property(&org.id, &unique_url(), t0);
    store
        .insert_property_keeping(&third, &kept(&other, "fp-d", "{}"))
        .await
        .unwrap();
    assert_eq!(store.get_property(&third.id).await.unwrap(), Some(third));
    assert_eq!(
        claim_key(s, &other, "fp-c", millis(t0, 1_000)).await,
        IdempotencyClaim::InUse
    );
}

/// Reads by id made at once (as the PostgreSQL store batches them) each get their own answer:
/// the same property read by many, others, and ids that do not exist.
pub async fn property_reads_at_once_get_their_own(store: Arc<dyn TestStore>) {
    let org = seed_organization(&*store, "Read at once").await;
    let mut sites = Vec::new();
    for i in 0..3 {
        sites.push(seed_property(&*store, &org, minutes(i)).await);
    }
    let missing = PropertyId::new();
    let wanted = |i: usize| match i % 5 {
        0 | 3 => Some(sites[0].clone()),
        1 => Some(sites[1].clone()),
        2 => Some(sites[2].clone()),
        _ => None,
    };
    let answers = run_concurrently(60, |i| {
        let store = Arc::clone(&store);
        let id = wanted(i).map_or_else(|| missing.clone(), |site| site.id);
        async move { store.get_property(&id).await.unwrap() }
    })
    .await;
    for (i, answer) in answers.into_iter().enumerate() {
        assert_eq!(answer, wanted(i), "read {i}");
    }
}

/// A second property with the same URL in the same organization is
/// [`StoreError::Duplicate`] and is not stored; the same URL in another organization is fine.
pub async fn property_duplicate_url_rejected_per_organization(store: Arc<dyn TestStore>) {
    let org = seed_organization(&*store, "First owner").await;
    let other = seed_organization(&*store, "Second owner").await;
    let url = unique_url();
    let original = property(&org.id, &url, minutes(1));
    store.insert_property(&original).await.unwrap();

    let duplicate = property(&org.id, &url, minutes(2));
    assert!(matches!(
        store.insert_property(&duplicate).await,
        Err(StoreError::Duplicate(_))
    ));
    assert_eq!(store.get_property(&duplicate.id).await.unwrap(), None);
    assert_eq!(store.count_properties(&org.id).await.unwrap(), 1);

    let elsewhere = property(&other.id, &url, minutes(3));
    store.insert_property(&elsewhere).await.unwrap();
    assert_eq!(
        store.find_property_by_url(&org.id, &url).await.unwrap(),
        Some(original)
    );
    assert_eq!(
        store.find_property_by_url(&other.id, &url).await.unwrap(),
        Some(elsewhere)
    );
}

/// Of 10 simultaneous inserts of the same URL in one organization, exactly one succeeds and
/// the others are [`StoreError::Duplicate`].
pub async fn property_concurrent_duplicate_url_single_winner(store: Arc<dyn TestStore>) {
    let org = seed_organization(&*store, "Racing sites").await;
    let url = unique_url();
    let candidates: Vec<Property> = (0..10)
        .map(|n| property(&org.id, &url, minutes(n)))
        .collect();
    let results = run_concurrently(candidates.len(), |n| {
        let store = Arc::clone(&store);
        let candidate = candidates[n].clone();
        async move { store.insert_property(&candidate).await }
    })
    .await;
    let winners: Vec<usize> = (0..results.len()).filter(|&n| results[n].is_ok()).collect();
    assert_eq!(winners.len(), 1, "{results:?}");
    assert!(results
        .iter()
        .all(|r| r.is_ok() || matches!(r, Err(StoreError::Duplicate(_)))));
    assert_eq!(
        store.find_property_by_url(&org.id, &url).await.unwrap(),
        Some(candidates[winners[0]].clone())
    );
    assert_eq!(store.count_properties(&org.id).await.unwrap(), 1);
}

/// `get_properties` returns each existing property asked for once, whatever its
/// organization; unknown ids give nothing.
pub async fn property_get_many(store: Arc<dyn TestStore>) {
    let org = seed_organization(&*store, "Many").await;
    let elsewhere = seed_organization(&*store, "Elsewhere").await;
    let a = seed_property(&*store, &org, minutes(0)).await;
    let b = seed_property(&*store, &org, minutes(1)).await;
    let c = seed_property(&*store, &elsewhere, minutes(2)).await;
    seed_property(&*store, &org, minutes(3)).await;
    let ids = vec![
        c.id.clone(),
        a.id.clone(),
        PropertyId::new(),
        a.id.clone(),
        b.id.clone(),
    ];
    let mut found = store.get_properties(&ids).await.unwrap();
    found.sort_by(|x, y| x.id.cmp(&y.id));
    let mut expected = vec![a, b, c];
    expected.sort_by(|x, y| x.id.cmp(&y.id));
    assert_eq!(found, expected);
    assert_eq!(store.get_properties(&[]).await.unwrap(), vec![]);
}

/// `find_property_by_url` matches the exact URL within the given organization only.
pub async fn property_find_by_url(store: Arc<dyn TestStore>) {
    let org = seed_organization(&*store, "Finder").await;
    let other = seed_organization(&*store, "Not the finder").await;
    let url = format!("{}/blog", unique_url());
    let site = property(&org.id, &url, minutes(1));
    let sibling = property(&org.id, &format!("{url}/archive"), minutes(2));
    store.insert_property(&site).await.unwrap();
    store.insert_property(&sibling).await.unwrap();

    assert_eq!(
        store.find_property_by_url(&org.id, &url).await.unwrap(),
        Some(site)
    );
    assert_eq!(
        store
            .find_property_by_url(&org.id, &format!("{url}/archive"))
            .await
            .unwrap(),
        Some(sibling)
    );
    assert_eq!(
        store
            .find_property_by_url(&org.id, &format!("{url}/"))
            .await
            .unwrap(),
        None
    );
    assert_eq!(
        store
            .find_property_by_url(&org.id, &url.to_uppercase())
            .await
            .unwrap(),
        None
    );
    assert_eq!(
        store.find_property_by_url(&other.id, &url).await.unwrap(),
        None
    );
}

/// `list_properties` is newest first, equal creation times ordered by id descending, and
/// `limit` caps the page.
pub async fn property_list_newest_first(store: Arc<dyn TestStore>) {
    let org = seed_organization(&*store, "Ordering").await;
    // Ids are generated in order a < b < c < d < e; creation times disagree with that order
    // and b, c, d share one.
    let urls: Vec<String> = (0..5).map(|_| unique_url()).collect();
    let a = property(&org.id, &urls[0], minutes(30));
    let b = property(&org.id, &urls[1], minutes(10));
    let c = property(&org.id, &urls[2], minutes(10));
    let d = property(&org.id, &urls[3], minutes(10));
    let e = property(&org.id, &urls[4], minutes(5));
    for site in [&c, &e, &a, &d, &b] {
        store.insert_property(site).await.unwrap();
    }

    let all = store
        .list_properties(&org.id, &first_page(10))
        .await
        .unwrap();
    assert_eq!(
        all,
        vec![a.clone(), d.clone(), c.clone(), b.clone(), e.clone()]
    );

    let two = store
        .list_properties(&org.id, &first_page(2))
        .await
        .unwrap();
    assert_eq!(two, vec![a, d.clone()]);

    let after_d = store
        .list_properties(
            &org.id,
            &PageRequest {
                limit: 10,
                after: Some(property_position(&d)),
            },
        )
        .await
        .unwrap();
    assert_eq!(after_d, vec![c, b, e]);
}

/// Keyset pagination over 25 properties (with shared creation times, inserted out of order,
/// mixed with another organization's) in pages of 7 yields 7, 7, 7, 4 items: every property
/// exactly once, in newest-first order.
pub async fn property_list_pages_with_keyset(store: Arc<dyn TestStore>) {
    let org = seed_organization(&*store, "Paging").await;
    let other = seed_organization(&*store, "Paging neighbour").await;
    let mut mine = Vec::new();
    for n in 0..25_i64 {
        // Creation times repeat in groups and run against id order.
        mine.push(property(&org.id, &unique_url(), minutes((n * 7) % 9)));
        store
            .insert_property(&property(&other.id, &unique_url(), minutes((n * 5) % 9)))
            .await
            .unwrap();
    }
    // Insert in an order that is neither id order nor time order.
    for n in (0..25).map(|n| (n * 11) % 25) {
        store.insert_property(&mine[n]).await.unwrap();
    }
    let mut expected = mine.clone();
    sort_newest_first(&mut expected, |p| (p.created_at, p.id.clone()));

    let store_ref = &store;
    let org_id = &org.id;
    let pages = walk_pages(
        7,
        |page| async move { store_ref.list_properties(org_id, &page).await },
        property_position,
    )
    .await;
    assert_eq!(
        pages.iter().map(Vec::len).collect::<Vec<_>>(),
        vec![7, 7, 7, 4]
    );
    assert_eq!(pages.concat(), expected);
}

/// Lists and counts of properties only see the given organization's.
pub async fn property_list_and_count_scoped_to_organization(store: Arc<dyn TestStore>) {
    let org = seed_organization(&*store, "Scoped").await;
    let other = seed_organization(&*store, "Scoped neighbour").await;
    let empty = seed_organization(&*store, "Scoped empty").await;
    let mine_old = seed_property(&*store, &org, minutes(1)).await;
    let theirs = seed_property(&*store, &other, minutes(2)).await;
    let mine_new = seed_property(&*store, &org, minutes(3)).await;

    assert_eq!(
        store
            .list_properties(&org.id, &first_page(10))
            .await
            .unwrap(),
        vec![mine_new, mine_old]
    );
    assert_eq!(
        store
            .list_properties(&other.id, &first_page(10))
            .await
            .unwrap(),
        vec![theirs]
    );
    assert_eq!(
        store
            .list_properties(&empty.id, &first_page(10))
            .await
            .unwrap(),
        vec![]
    );
    assert_eq!(store.count_properties(&org.id).await.unwrap(), 2);
    assert_eq!(store.count_properties(&other.id).await.unwrap(), 1);
    assert_eq!(store.count_properties(&empty.id).await.unwrap(), 0);
}

/// `set_property_verified` marks a property verified (idempotently) and returns it; an
/// unknown id is `None`.
pub async fn property_set_verified(store: Arc<dyn TestStore>) {
    let org = seed_organization(&*store, "Verifier").await;
    let site = seed_property(&*store, &org, minutes(1)).await;
    let untouched = seed_property(&*store, &org, minutes(2)).await;
    let expected = Property {
        verified: true,
        ..site.clone()
    };

    assert_eq!(
        store.set_property_verified(&site.id).await.unwrap(),
        Some(expected.clone())
    );
    assert_eq!(
        store.set_property_verified(&site.id).await.unwrap(),
        Some(expected.clone())
    );
    assert_eq!(store.get_property(&site.id).await.unwrap(), Some(expected));
    assert_eq!(
        store.get_property(&untouched.id).await.unwrap(),
        Some(untouched)
    );
    assert_eq!(
        store
            .set_property_verified(&PropertyId::new())
            .await
            .unwrap(),
        None
    );
}

/// `set_property_gsc_site` links, relinks and unlinks a Search Console site and returns the
/// property; an unknown id is `None`.
pub async fn property_set_gsc_site(store: Arc<dyn TestStore>) {
    let org = seed_organization(&*store, "Linker").await;
    let site = seed_property(&*store, &org, minutes(1)).await;

    let linked = Property {
        gsc_site_url: Some("sc-domain:example.com".to_owned()),
        ..site.clone()
    };
    assert_eq!(
        store
            .set_property_gsc_site(&site.id, Some("sc-domain:example.com"))
            .await
            .unwrap(),
        Some(linked.clone())
    );
    assert_eq!(store.get_property(&site.id).await.unwrap(), Some(linked));

    let relinked = Property {
        gsc_site_url: Some("https://www.example.com/".to_owned()),
        ..site.clone()
    };
    assert_eq!(
        store
            .set_property_gsc_site(&site.id, Some("https://www.example.com/"))
            .await
            .unwrap(),
        Some(relinked)
    );

    assert_eq!(
        store.set_property_gsc_site(&site.id, None).await.unwrap(),
        Some(site.clone())
    );
    assert_eq!(store.get_property(&site.id).await.unwrap(), Some(site));
    assert_eq!(
        store
            .set_property_gsc_site(&PropertyId::new(), Some("sc-domain:x.com"))
            .await
            .unwrap(),
        None
    );
}
