//! The settings parser under random input: any key and any text is either taken, and then
//! reads back as a value the parser takes again unchanged, or refused with a message that
//! names the key, leaving the settings as they were. Never a panic.

use proptest::prelude::*;

/// Each property's run: in CI a fixed number of cases from a fixed seed, so a run is the same
/// every time; `TASKKEEPER_FUZZ_CASES` (what `bench/soak/run.sh` sets) runs more, from a
/// random seed unless `TASKKEEPER_FUZZ_SEED` names one (a failure prints the seed to replay).
fn config(cases: u32) -> ProptestConfig {
    let env = |name: &str| std::env::var(name).ok().and_then(|v| v.parse::<u64>().ok());
    let soak = env("TASKKEEPER_FUZZ_CASES");
    let seed = match (env("TASKKEEPER_FUZZ_SEED"), soak) {
        (Some(seed), _) => proptest::test_runner::RngSeed::Fixed(seed),
        (None, Some(_)) => proptest::test_runner::RngSeed::Random,
        (None, None) => proptest::test_runner::RngSeed::Fixed(0x7a5c_4ee9),
    };
    ProptestConfig {
        cases: soak.map_or(cases, |n| u32::try_from(n).unwrap_or(u32::MAX)),
        rng_seed: seed,
        ..ProptestConfig::default()
    }
}
use taskkeeper_core::settings::{Settings, keys};

fn arb_key() -> impl Strategy<Value = String> {
    prop_oneof![
        proptest::sample::select(keys().collect::<Vec<_>>()).prop_map(str::to_owned),
        "[a-z._-]{0,24}",
        ".{0,12}",
    ]
}

fn arb_value() -> impl Strategy<Value = String> {
    prop_oneof![
        "[0-9]{0,6}[smhd]?",
        "([0-9]{1,3}[smhd],){0,5}[0-9]{1,3}[smhd]",
        "(true|false|yes|no|TRUE|1|0|-1)",
        "[0-9]{15,25}[smhd]",
        ".{0,40}",
        "\\PC{0,16}",
    ]
}

proptest! {
    #![proptest_config(config(2_000))]

    #[test]
    fn any_key_and_text_is_taken_and_round_trips_or_refused_unchanged(
        key in arb_key(),
        value in arb_value(),
    ) {
        let mut settings = Settings::default();
        let before = settings.pairs();
        match settings.set(&key, &value) {
            Ok(()) => {
                let shown = settings.get(&key).unwrap();
                let mut again = settings.clone();
                prop_assert!(again.set(&key, &shown).is_ok(), "{key}={shown:?} read back but refused");
                prop_assert_eq!(again.pairs(), settings.pairs());
            }
            Err(e) => {
                prop_assert!(e.to_string().contains(key.as_str()) || !keys().any(|k| k == key),
                    "{e}");
                prop_assert_eq!(settings.pairs(), before, "a refusal changed nothing");
            }
        }
    }
}
