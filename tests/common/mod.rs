//! Helpers shared by the integration tests (`mod common;`).

use proptest::prelude::ProptestConfig;

/// `ci` cases, unless `PROPTEST_CASES` asks for a longer soak
/// (`PROPTEST_CASES=20000 cargo test --release --test NAME`).
pub fn cases(ci: u32) -> ProptestConfig {
    let default = ProptestConfig::default();
    ProptestConfig {
        cases: if std::env::var_os("PROPTEST_CASES").is_some() {
            default.cases
        } else {
            ci
        },
        ..default
    }
}
