//! Unit tests of the list reader.

use super::*;
use crate::fleet::session::{Live, Session, Status};

/// What reading `answer` in pieces of `piece` bytes gave: the rows as
/// owned values, and the tally; or only that it was garbage.
type Read = Result<(Rows, RowTally), ()>;

/// Each row read, as owned values.
type Rows = Vec<(Session, Live)>;

fn read_in(shape: Shape, answer: &[u8], piece: usize) -> Read {
    let mut rows = Vec::new();
    let tally = read(shape, answer, piece, &mut |r| {
        rows.push((r.session(), r.live()))
    });
    tally.map(|t| (rows, t)).map_err(drop)
}

/// Reads `answer` whole and in pieces of every size: all the same.
fn same_in_every_piece_size(shape: Shape, answer: &str) -> Read {
    let whole = read_in(shape, answer.as_bytes(), 0);
    for piece in 1..=answer.len() {
        assert_eq!(
            read_in(shape, answer.as_bytes(), piece),
            whole,
            "pieces of {piece}"
        );
    }
    whole
}

/// A `-p P list --json` answer as Go indents it, with strings that hold
/// what a splitter could trip on, and nesting in fields nobody reads.
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
    let (rows, tally) = read_in(Shape::All, out.as_bytes(), 0)?;
    Ok((rows.into_iter().map(|(s, _)| s).collect(), tally.reasons))
}

/// `-p P list --json` held whole: its rows and skip reasons.
fn list_profile(out: &str) -> Result<(Rows, Vec<String>), ()> {
    read_in(Shape::Profile, out.as_bytes(), 0).map(|(rows, tally)| (rows, tally.reasons))
}

#[test]
fn rows_cut_at_any_byte_read_the_same_as_whole() {
    let (rows, tally) = same_in_every_piece_size(Shape::Profile, PROFILE).unwrap();
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
        for piece in [1, 7, 64, 0] {
            assert_eq!(
                read_in(Shape::Profile, &answer.as_bytes()[..cut], piece),
                Err(()),
                "cut at {cut}, pieces of {piece}: {:?}",
                &answer[..cut]
            );
        }
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
    ] {
        assert_eq!(
            same_in_every_piece_size(Shape::All, answer),
            Err(()),
            "{answer}"
        );
    }
}

#[test]
fn a_row_that_is_json_but_no_session_is_skipped_not_blinding() {
    let answer = r#"[42, "te]xt", null, [1,{"a":"]"}], true,
            {"title":"no id"}, {"id":""}, {"id":7},
            {"id":"a-1","title":["not","a","string"]},
            {"id":"b-1","title":"t","is_conductor":"yes\nforged line"},
            {"id":"c-1","title":"conductor-ok","group":null,"parent_session_id":null}]"#;
    let (rows, tally) = same_in_every_piece_size(Shape::All, answer).unwrap();
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
fn a_row_past_the_limit_is_skipped_and_never_held() {
    let long = "x".repeat(MAX_ROW_BYTES);
    let answer =
        format!(r#"[{{"id":"a-1","title":"{long}"}},{{"id":"b-1","title":"conductor-b"}}]"#);
    for piece in [0, 4096, 65536] {
        let (rows, tally) = read_in(Shape::All, answer.as_bytes(), piece).unwrap();
        assert_eq!(rows.len(), 1, "pieces of {piece}");
        assert_eq!(rows[0].0.id, "b-1");
        assert_eq!(tally.reasons, ["row 1: longer than 1024 KiB, not read"]);
    }
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
        assert_eq!(same_in_every_piece_size(shape, answer), empty, "{answer}");
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
        assert_eq!(same_in_every_piece_size(shape, answer), Err(()), "{answer}");
    }
    let long = format!("null{}", " ".repeat(MAX_TEXT_BYTES));
    assert_eq!(read_in(Shape::All, long.as_bytes(), 1000), Err(()));
}

#[test]
fn a_reader_says_when_more_cannot_help() {
    let mut ignore = |_: &Row<'_>| {};
    let mut reader = ListReader::new(Shape::All, &mut ignore);
    assert!(reader.feed(b"[{\"id\":\"a-1\"}"));
    assert!(!reader.feed(b"}"));
    let mut ignore = |_: &Row<'_>| {};
    let mut reader = ListReader::new(Shape::All, &mut ignore);
    let text = format!("  {}", "x".repeat(MAX_TEXT_BYTES + 1));
    assert!(!reader.feed(text.as_bytes()));
    assert_eq!(reader.text().len(), MAX_TEXT_BYTES);
}

#[test]
fn only_the_first_reasons_are_kept_but_all_are_counted() {
    let answer = format!("[{}{{\"id\":\"a-1\"}}]", "1,".repeat(1000));
    let (rows, tally) = read_in(Shape::All, answer.as_bytes(), 100).unwrap();
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
    let whole = read_in(Shape::Profile, answer, 0);
    for piece in 1..answer.len() {
        assert_eq!(
            read_in(Shape::Profile, answer, piece),
            whole,
            "pieces of {piece}"
        );
    }
    let (rows, tally) = whole.unwrap();
    let ids: Vec<_> = rows.iter().map(|(s, _)| s.id.as_str()).collect();
    assert_eq!(ids, ["b-1", "c-1"]);
    assert_eq!(tally.reasons, [r#"row 1 (id "a-1"): not UTF-8"#]);
}

#[test]
fn a_row_cut_by_pieces_is_held_once_and_the_long_one_not_at_all() {
    let long = "x".repeat(2 * MAX_ROW_BYTES);
    let answer = format!(r#"[{{"id":"a-1","title":"{long}"}},{{"id":"b-1"}}]"#);
    let mut ignore = |_: &Row<'_>| {};
    let mut reader = ListReader::new(Shape::All, &mut ignore);
    for piece in answer.as_bytes().chunks(4096) {
        assert!(reader.feed(piece));
        assert!(
            reader.cut.capacity() <= 2 * MAX_ROW_BYTES,
            "{} held",
            reader.cut.capacity()
        );
    }
    assert_eq!(reader.finish().unwrap().rows, 1);
}

#[test]
fn framing_follows_strings_escapes_and_scalars_in_every_piece_size() {
    let answer =
        r#"[ "a,\"]b" , -12.5e+3,true,null, [1,[]], {"id":"a-1","path":"\\","e":"\\\"]"} ]"#;
    let (rows, tally) = same_in_every_piece_size(Shape::All, answer).unwrap();
    assert_eq!(rows[0].0.path, "\\");
    assert_eq!(tally.rows, 1);
    assert_eq!(tally.skipped, 5);
    assert_eq!(tally.reasons[1], "row 2: not an object but a number");
    for broken in ["[1,,2]", "[1 2]", "[-1e]", r#"["a\"]"#, "[}]"] {
        assert_eq!(
            same_in_every_piece_size(Shape::All, broken),
            Err(()),
            "{broken}"
        );
    }
}

#[test]
fn an_answer_cut_short_says_where() {
    let why = |answer: &str| {
        let mut ignore = |_: &Row<'_>| {};
        let mut reader = ListReader::new(Shape::All, &mut ignore);
        reader.feed(answer.as_bytes());
        reader.finish().unwrap_err().0
    };
    assert!(why(r#"[{"id":"a-1"},{"id":"#).contains("ends inside row 2 after 20 bytes"));
    assert!(why(r#"[{"id":"a-1"}"#).contains("ends inside row 1"));
    assert!(why(r#"[{"id":"a-1"}, "#).contains("ends inside the list"));
}

#[test]
fn an_empty_array_from_a_profile_list_means_no_sessions_like_null() {
    // 1.16.11 (#2277): `-p P list --json` with no sessions prints `[]`.
    let empty = Ok((Vec::new(), RowTally::default()));
    for answer in ["[]\n", "[ ]", "\n[\n]\n"] {
        assert_eq!(
            same_in_every_piece_size(Shape::Profile, answer),
            empty,
            "{answer:?}"
        );
        assert_eq!(
            same_in_every_piece_size(Shape::All, answer),
            empty,
            "{answer:?}"
        );
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
fn rows_of_the_newer_shape_read_in_every_piece_size() {
    let (rows, tally) = same_in_every_piece_size(Shape::Profile, PROFILE_NEWER).unwrap();
    assert_eq!((tally.rows, tally.skipped), (2, 0), "{:?}", tally.reasons);
    assert_eq!(rows[0].0.id, "3f9c2a1b-1755891234");
    assert_eq!(rows[0].0.group, "conductor");
    assert_eq!(rows[0].1.status, Some(Status::Error));
    assert_eq!(rows[0].1.substate.as_deref(), Some("usage-limit"));
    assert_eq!(rows[0].1.channels.len(), 1);
    assert_eq!(rows[1].1.status, Some(Status::Running));
    // The same rows as `list --all --json` prints them (no status there).
    let (rows, tally) = same_in_every_piece_size(Shape::All, PROFILE_NEWER).unwrap();
    assert_eq!((tally.rows, tally.skipped), (2, 0), "{:?}", tally.reasons);
    assert_eq!(rows[1].0.profile, "work");
}
