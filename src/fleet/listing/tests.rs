//! Unit tests of the list reader.

use super::*;
use crate::fleet::session::{Live, Session, Status};

/// What reading `answer` gave: the rows as owned values, and the tally; or
/// only that it was garbage.
type Read = Result<(Rows, RowTally), ()>;

/// Each row read, as owned values.
type Rows = Vec<(Session, Live)>;

fn read_in(shape: Shape, answer: impl AsRef<[u8]>) -> Read {
    let mut rows = Vec::new();
    let tally = read(shape, answer.as_ref(), &mut |r| {
        rows.push((r.session(), r.live()))
    });
    tally.map(|t| (rows, t)).map_err(drop)
}

/// Why `answer` is garbage.
fn garbage(shape: Shape, answer: &str) -> String {
    read(shape, answer.as_bytes(), &mut |_| {}).unwrap_err().0
}

/// A `-p P list --json` answer as Go indents it, with strings that hold
/// brackets and escapes, and nesting in fields nobody reads.
const PROFILE: &str = r#"[
  {
    "id": "3f9c2a1b-1755891234",
    "title": "conductor-ops ] , } \" [ {",
    "path": "C:\\work\\ops",
    "group": "conductor",
    "tool": "claude",
    "status": "error",
    "substate": "auth-401",
    "channels": [
      "plugin:telegram@claude-plugins-official"
    ],
    "extra": {"a": [1, {"b": "]}"}, -2.5e3, true, null], "c": "\u003c\u2028"},
    "profile": "work",
    "archived": false,
    "archived_at": "0001-01-01T00:00:00Z",
    "created_at": "2026-08-20T10:00:00+02:00"
  },
  {
    "id": "a0b1c2d3-1755899999",
    "parent_session_id": "3f9c2a1b-1755891234",
    "title": "w\u00f6rker-1",
    "path": "/srv/app",
    "group": "srv",
    "status": "starting",
    "profile": "work"
  }
]
"#;

/// `list --all --json` held whole: its sessions and skip reasons.
fn list_all(out: &str) -> Result<(Vec<Session>, Vec<String>), ()> {
    let (rows, tally) = read_in(Shape::All, out)?;
    Ok((rows.into_iter().map(|(s, _)| s).collect(), tally.reasons))
}

/// `-p P list --json` held whole: its rows and skip reasons.
fn list_profile(out: &str) -> Result<(Rows, Vec<String>), ()> {
    read_in(Shape::Profile, out).map(|(rows, tally)| (rows, tally.reasons))
}

#[test]
fn the_rows_of_a_go_indented_answer_are_read() {
    let (rows, tally) = read_in(Shape::Profile, PROFILE).unwrap();
    assert_eq!(tally.rows, 2);
    assert_eq!(tally.skipped, 0);
    let (s, l) = &rows[0];
    assert_eq!(s.id, "3f9c2a1b-1755891234");
    assert_eq!(s.title, "conductor-ops ] , } \" [ {");
    assert_eq!(s.path, "C:\\work\\ops");
    assert_eq!(s.profile, "work");
    assert_eq!(l.status, Some(Status::Error));
    assert_eq!(l.substate.as_deref(), Some("auth-401"));
    assert_eq!(l.channels, ["plugin:telegram@claude-plugins-official"]);
    let (s, l) = &rows[1];
    assert_eq!(s.title, "wörker-1");
    assert_eq!(s.parent_session_id.as_deref(), Some("3f9c2a1b-1755891234"));
    assert_eq!(l.status, Some(Status::Unknown));
}

#[test]
fn an_answer_cut_short_is_garbage_wherever_it_is_cut() {
    let answer = PROFILE.trim_end();
    for cut in 1..answer.len() {
        let part = &answer.as_bytes()[..cut];
        assert_eq!(read_in(Shape::Profile, part), Err(()), "cut at {cut}");
    }
}

#[test]
fn broken_arrays_are_garbage_not_fewer_sessions() {
    for answer in [
        r#"[{"id":"a-1"}] x"#,
        r#"[{"id":"a-1"}]]"#,
        r#"[{"id":"a-1"}],"#,
        r#"[{"id":"a-1"} {"id":"b-1"}]"#,
        r#"[{"id":"a-1"},]"#,
        r#"[,{"id":"a-1"}]"#,
        r#"[{"id":"a-1","t":[1}]"#,
        r#"[{"id":"a-1","t":tru}]"#,
        r#"[{"id":"a-1","t":"x" "y"}]"#,
        r#"[{"id":"a-1"},{"id":"b-1","t":01}]"#,
        r#"[{"id":"a-1"}, tru]"#,
        r#"[{"id":"a-1"}, }]"#,
        "[1,,2]",
        "[-1e]",
        r#"["a\"]"#,
        "[}]",
    ] {
        assert_eq!(read_in(Shape::All, answer), Err(()), "{answer}");
    }
}

#[test]
fn a_row_that_is_json_but_no_session_is_skipped_not_blinding() {
    let answer = r#"[42, "te]xt", null, [1,{"a":"]"}], true,
            {"title":"no id"}, {"id":""}, {"id":7},
            {"id":"a-1","title":["not","a","string"]},
            {"id":"b-1","title":"t","is_conductor":"yes\nforged line"},
            {"id":"c-1","title":"conductor-ok","group":null,"parent_session_id":null}]"#;
    let (rows, tally) = read_in(Shape::All, answer).unwrap();
    assert_eq!(
        rows.iter().map(|(s, _)| s.id.as_str()).collect::<Vec<_>>(),
        ["c-1"]
    );
    assert_eq!(tally.rows, 1);
    assert_eq!(tally.skipped, 10);
    assert_eq!(tally.reasons[0], "row 1: not an object but a number");
    assert_eq!(tally.reasons[1], "row 2: not an object but a string");
    assert_eq!(tally.reasons[3], "row 4: not an object but an array");
    assert_eq!(tally.reasons[5], "row 6: no id");
    assert!(tally.reasons[8].starts_with("row 9 (id \"a-1\"): invalid type"));
    assert!(
        tally
            .reasons
            .iter()
            .all(|r| !r.contains('\n') && !r.contains(" at line ")),
        "{:?}",
        tally.reasons
    );
}

#[test]
fn a_row_past_the_limit_is_skipped() {
    let long = "x".repeat(MAX_ROW_BYTES);
    let answer =
        format!(r#"[{{"id":"a-1","title":"{long}"}},{{"id":"b-1","title":"conductor-b"}}]"#);
    let (rows, tally) = read_in(Shape::All, answer).unwrap();
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0].0.id, "b-1");
    assert_eq!(tally.reasons, ["row 1: longer than 1024 KiB, not read"]);
    let just = format!(r#"{{"id":"a-1","t":"{}"}}"#, "x".repeat(MAX_ROW_BYTES - 19));
    let (rows, _) = read_in(Shape::All, format!("[{just}]")).unwrap();
    assert_eq!(rows.len(), 1, "a row of {} bytes is read", just.len());
}

#[test]
fn texts_that_mean_no_sessions_and_texts_that_do_not() {
    let empty = Ok((Vec::new(), RowTally::default()));
    for (shape, answer) in [
        (Shape::All, "null\n"),
        (Shape::All, "No profiles found.\n"),
        (Shape::All, "  []  "),
        (Shape::Profile, "null"),
        (Shape::Profile, "No sessions found in profile 'work'.\n"),
    ] {
        assert_eq!(read_in(shape, answer), empty, "{answer}");
    }
    for (shape, answer) in [
        (Shape::All, ""),
        (Shape::All, "\n \n"),
        (Shape::All, "No sessions found in profile 'work'.\n"),
        (Shape::Profile, "No profiles found.\n"),
        (Shape::All, "Error: failed to list profiles: boom"),
        (
            Shape::All,
            r#"{"code":"NOT_FOUND","error":"x","success":false}"#,
        ),
        (Shape::All, "\"[]\""),
        (Shape::Profile, "nullnull"),
    ] {
        assert_eq!(read_in(shape, answer), Err(()), "{answer}");
    }
    let long = format!("null{}", " ".repeat(MAX_TEXT_BYTES));
    assert_eq!(
        garbage(Shape::All, &long),
        "expected a JSON array, got more than 64 KiB of something else starting \"null\""
    );
    let error = r#"{"code":"NOT_FOUND","error":"x","success":false}"#;
    assert_eq!(
        garbage(Shape::All, error),
        format!("expected a JSON array, got \"{error}\"")
    );
    assert_eq!(
        garbage(Shape::All, "  Error: boom\n"),
        r#"not JSON: "Error: boom""#
    );
}

#[test]
fn only_the_first_reasons_are_kept_but_all_are_counted() {
    let answer = format!("[{}{{\"id\":\"a-1\"}}]", "1,".repeat(1000));
    let (rows, tally) = read_in(Shape::All, answer).unwrap();
    assert_eq!(rows.len(), 1);
    assert_eq!(tally.skipped, 1000);
    assert_eq!(tally.reasons.len(), MAX_REASONS);
}

#[test]
fn list_all_edge_outputs() {
    assert_eq!(list_all("null\n").unwrap(), (Vec::new(), Vec::new()));
    assert_eq!(
        list_all("No profiles found.\n").unwrap(),
        (Vec::new(), Vec::new())
    );
    assert!(list_all("{\"id\": \"oops").is_err());
    assert!(list_all("").is_err());
    assert!(list_all("Error: failed to list profiles: boom").is_err());
    assert!(list_all("{}").is_err());
}

#[test]
fn list_all_reads_the_real_shape() {
    let out = r#"[{"id":"3f9c2a1b-1755891234","title":"conductor-ops","path":"/p","group":"conductor",
            "tool":"claude","profile":"default","created_at":"2026-08-20T10:00:00Z"},
            {"id":"a0b1c2d3-1755899999","parent_session_id":"3f9c2a1b-1755891234","title":"worker-1",
            "path":"/srv","group":"srv","tool":"claude","profile":"work","created_at":"2026-08-21T09:00:00Z"}]"#;
    let s = list_all(out).unwrap();
    assert!(s.1.is_empty());
    let s = s.0;
    assert_eq!(s.len(), 2);
    assert_eq!(s[0].id, "3f9c2a1b-1755891234");
    assert_eq!(s[0].group, "conductor");
    assert_eq!(s[1].profile, "work");
    assert_eq!(
        s[1].parent_session_id.as_deref(),
        Some("3f9c2a1b-1755891234")
    );
    assert!(!s[0].is_conductor);
}

#[test]
fn profile_list_carries_status() {
    assert_eq!(
        list_profile("No sessions found in profile 'work'.\n").unwrap(),
        (Vec::new(), Vec::new())
    );
    let out = r#"[{"id":"x1-1","title":"t","group":"g","profile":"work","status":"starting",
            "channels":["plugin:telegram@claude-plugins-official"],"archived":false}]"#;
    let v = list_profile(out).unwrap().0;
    assert_eq!(v[0].1.status, Some(Status::Unknown));
    assert_eq!(v[0].1.channels.len(), 1);
}

#[test]
fn a_list_row_without_an_id_is_skipped_not_blinding() {
    let out = r#"[{"title":"no id here","group":"conductor"},
            {"id":"","title":"empty id"},
            {"id":"3f9c2a1b-1755891234","title":"conductor-ops","group":"conductor","profile":"default"}]"#;
    let l = list_all(out).unwrap();
    assert_eq!(l.0.len(), 1);
    assert_eq!(l.0[0].id, "3f9c2a1b-1755891234");
    assert_eq!(l.1.len(), 2);
    assert!(l.1[0].starts_with("row 1: no id"), "{:?}", l.1);
    assert!(l.1[1].starts_with("row 2: no id"), "{:?}", l.1);
}

#[test]
fn a_list_row_with_wrong_types_is_skipped_not_blinding() {
    let out = r#"[42, "text", null, [1,2], {"id":7,"title":"numeric id"},
            {"id":"a-1","title":["not","a","string"]},
            {"id":"b-1","title":"t","is_conductor":"yes\nforged line"},
            {"id":"c-1","title":"conductor-ok","group":null,"parent_session_id":null}]"#;
    let l = list_all(out).unwrap();
    assert_eq!(
        l.0.iter().map(|s| s.id.as_str()).collect::<Vec<_>>(),
        ["c-1"]
    );
    assert_eq!(l.1.len(), 7, "{:?}", l.1);
    assert!(l.1[5].contains("(id \"a-1\")"), "{:?}", l.1);
    assert!(
        l.1.iter()
            .all(|r| !r.contains('\n') && r.chars().count() < 300),
        "{:?}",
        l.1
    );
}

#[test]
fn a_profile_list_row_with_a_bad_status_is_skipped_not_blinding() {
    let out = r#"[{"id":"x-1","title":"t","status":{"oops":1}},
            {"title":"no id","status":"error"},
            {"id":"y-1","title":"conductor-y","status":"error","channels":null,"auth_hold":null}]"#;
    let l = list_profile(out).unwrap();
    assert_eq!(l.0.len(), 1);
    assert_eq!(l.0[0].0.id, "y-1");
    assert_eq!(l.0[0].1.status, Some(Status::Error));
    assert_eq!(l.1.len(), 2);
}

#[test]
fn an_answer_that_is_not_an_array_stays_unreadable() {
    for out in ["garbage", "{\"id\":\"x\"}", "42", "\"[]\"", "[{"] {
        assert!(list_all(out).is_err(), "{out}");
        assert!(list_profile(out).is_err(), "{out}");
    }
    assert_eq!(list_profile("null").unwrap(), (Vec::new(), Vec::new()));
}

#[test]
fn a_byte_that_is_not_utf8_skips_its_row_alone() {
    let answer = b"[{\"id\":\"a-1\",\"title\":\"conductor-\xff\"},\n {\"id\":\"b-1\",\"tool\":\"\xfe\"}, {\"id\":\"c-1\"}]";
    let (rows, tally) = read_in(Shape::Profile, answer).unwrap();
    let ids: Vec<_> = rows.iter().map(|(s, _)| s.id.as_str()).collect();
    assert_eq!(ids, ["b-1", "c-1"]);
    assert_eq!(tally.reasons, [r#"row 1 (id "a-1"): not UTF-8"#]);
    assert_eq!(read_in(Shape::Profile, b"[{\"id\":\"a-1\"},\xff]"), Err(()));
}

#[test]
fn an_answer_cut_short_says_where() {
    assert_eq!(
        garbage(Shape::All, r#"[{"id":"a-1"},{"id":"#),
        "not a readable JSON array: EOF while parsing a value at line 1 column 20"
    );
    assert_eq!(
        garbage(Shape::All, "[\n  {\"id\":\"a-1\"}\n"),
        "not a readable JSON array: EOF while parsing a list at line 3 column 0"
    );
}

#[test]
fn an_empty_array_from_a_profile_list_means_no_sessions_like_null() {
    // 1.16.11 (#2277): `-p P list --json` with no sessions prints `[]`.
    let empty = Ok((Vec::new(), RowTally::default()));
    for answer in ["[]\n", "[ ]", "\n[\n]\n"] {
        assert_eq!(read_in(Shape::Profile, answer), empty, "{answer:?}");
        assert_eq!(read_in(Shape::All, answer), empty, "{answer:?}");
    }
}

/// A `-p P list --json` row as 1.16.11 to 1.16.25 print it: every key the
/// newer releases added, with objects, arrays and nulls where a strict
/// reader could stumble.
const PROFILE_NEWER: &str = r#"[
  {
    "id": "3f9c2a1b-1755891234",
    "title": "conductor-ops",
    "path": "/srv/ops",
    "group": "conductor",
    "tool": "codex",
    "status": "error",
    "substate": "usage-limit",
    "substate_detail": "try again at 4:05 PM",
    "channels": ["plugin:telegram@claude-plugins-official"],
    "profile": "work",
    "account": "personal",
    "archived": false,
    "archived_at": "0001-01-01T00:00:00Z",
    "created_at": "2026-09-20T10:00:00Z",
    "last_activity_at": "2026-09-21T10:00:00Z",
    "viewers": [{"activity": "2026-09-21T10:00:00Z", "height": 60, "name": "/dev/pts/3",
                 "tty": "/dev/pts/3", "user": "ashesh", "width": 200}],
    "status_source": "hook",
    "background_work": {"active": true, "tasks": [{"kind": "bash", "since": 1.5e9}]},
    "superseded_by": "",
    "supersedes": "a0b1c2d3-1755899999",
    "codex_session_id": "019a1b2c",
    "resolved_codex_home": "/home/u/.codex",
    "hook_status": "waiting",
    "hook_status_fresh": true,
    "order": 3,
    "pin": false,
    "wrapper": null,
    "transcript_path": null,
    "transcript_ids": ["a", "b"],
    "codex_hooks": {"installed": true, "events": ["Stop"], "extra": null},
    "model_id": null,
    "extra_args": []
  },
  {
    "id": "a0b1c2d3-1755899999",
    "title": "worker",
    "path": "/srv/app",
    "group": "srv",
    "tool": "claude",
    "status": "running",
    "profile": "work",
    "account": "",
    "viewers": null,
    "background_work": null,
    "status_source": null,
    "substate_detail": null,
    "superseded_by": "3f9c2a1b-1755891234"
  }
]
"#;

#[test]
fn rows_of_the_newer_shape_are_read() {
    let (rows, tally) = read_in(Shape::Profile, PROFILE_NEWER).unwrap();
    assert_eq!((tally.rows, tally.skipped), (2, 0), "{:?}", tally.reasons);
    assert_eq!(rows[0].0.id, "3f9c2a1b-1755891234");
    assert_eq!(rows[0].0.group, "conductor");
    assert_eq!(rows[0].1.status, Some(Status::Error));
    assert_eq!(rows[0].1.substate.as_deref(), Some("usage-limit"));
    assert_eq!(rows[0].1.channels.len(), 1);
    assert_eq!(rows[1].1.status, Some(Status::Running));
    // The same rows as `list --all --json` prints them (no status there).
    let (rows, tally) = read_in(Shape::All, PROFILE_NEWER).unwrap();
    assert_eq!((tally.rows, tally.skipped), (2, 0), "{:?}", tally.reasons);
    assert_eq!(rows[1].0.profile, "work");
}
