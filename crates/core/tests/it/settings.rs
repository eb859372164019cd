//! The settings parser under random input: any key and any text is either taken, and then
//! reads back as a value the parser takes again unchanged, or refused with a message that
//! names the key, leaving the settings as they were. Never a panic.

use proptest::prelude::*;

/// How many cases each property runs: CI's share by default, more with
/// `TASKKEEPER_FUZZ_CASES` (`bench/soak/run.sh` sets it).
fn cases(default: u32) -> u32 {
    std::env::var("TASKKEEPER_FUZZ_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}
use taskkeeper_core::settings::{KEYS, Settings};

fn arb_key() -> impl Strategy<Value = String> {
    prop_oneof![
        proptest::sample::select(KEYS.to_vec()).prop_map(str::to_owned),
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
    #![proptest_config(ProptestConfig { cases: cases(2_000), ..ProptestConfig::default() })]

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
                prop_assert!(e.to_string().contains(key.as_str()) || !KEYS.contains(&key.as_str()),
                    "{e}");
                prop_assert_eq!(settings.pairs(), before, "a refusal changed nothing");
            }
        }
    }
}
