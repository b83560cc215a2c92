//! The README's issue catalogue is generated from the code: this test fails, printing the
//! table to paste, when the two differ.

#[test]
fn the_readme_lists_the_issue_catalogue_as_the_code_defines_it() {
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../README.md"))
        .expect("README.md");
    let table = xf_core::crawl::checks::catalogue_markdown();
    assert!(
        readme.contains(&table),
        "README.md's issue catalogue differs from xf_core::crawl::checks::CATALOGUE; \
         replace the table under \"Issue catalogue\" with:\n\n{table}"
    );
}
