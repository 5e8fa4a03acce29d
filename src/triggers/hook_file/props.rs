//! Property tests of the hook file readers: whatever a name or a body
//! holds, they never panic, and a name stands only for a valid id.

use proptest::prelude::*;

use super::{hook_id, read_hook};
use crate::fleet::session::is_valid_id;
use crate::testing::{input, json, CASES};

proptest! {
    #![proptest_config(ProptestConfig::with_cases(CASES))]

    #[test]
    fn hook_file_names_never_panic_and_name_a_valid_id(
        name in prop_oneof![
            any::<String>(),
            "\\.?[a-zA-Z0-9._/-]{0,24}(\\.generation)?\\.(json|lock|sid)(\\.tmp-[0-9]{1,4})?",
        ]
    ) {
        if let Some(id) = hook_id(&name) {
            prop_assert!(id.len() < name.len());
            prop_assert_eq!(format!("{id}.json"), name.clone());
            prop_assert!(is_valid_id(id) && !id.contains('/'));
        }
    }

    #[test]
    fn hook_file_bodies_never_panic_and_are_bounded(
        bytes in prop_oneof![
            input(),
            json().prop_map(|status| serde_json::json!({"status": status, "event": "Stop", "ts": 1})
                .to_string()
                .into_bytes()),
        ]
    ) {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::write(tmp.path().join("a-1.json"), &bytes).unwrap();
        if let Some(hook) = read_hook(tmp.path(), "a-1") {
            prop_assert!(hook.ts.is_none_or(f64::is_finite));
        }
    }
}
