//! The storage conformance suite of `xf-core` run against [`MemoryStore`], a fresh store per
//! behaviour.

use std::sync::Arc;

use xf_core::testing::TestStore;
use xf_storage_memory::MemoryStore;

async fn make_store() -> Arc<dyn TestStore> {
    Arc::new(MemoryStore::new())
}

xf_core::store_conformance!(make_store);
