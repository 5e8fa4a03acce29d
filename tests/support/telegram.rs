//! A stand-in for the Telegram Bot API on loopback: it answers every request
//! as its script says (`{"ok":true}`, optionally `429` first) and keeps what
//! it received.

use std::io::{BufRead, BufReader, Read, Write};
use std::sync::{Arc, Mutex};

/// A stand-in for the Telegram Bot API on loopback: answers every request
/// with `{"ok":true}` and keeps what it received.
pub(crate) struct TelegramStub {
    pub base: String,
    requests: Arc<Mutex<Vec<String>>>,
}

impl TelegramStub {
    pub(crate) fn start() -> TelegramStub {
        TelegramStub::start_with_429s(0)
    }

    /// Answers the first `n` requests `429 Too Many Requests` with
    /// `retry_after: 1`, then `200`.
    pub(crate) fn start_with_429s(n: usize) -> TelegramStub {
        TelegramStub::answering(move |count, _request_line| {
            if count <= n {
                (
                    "429 Too Many Requests",
                    "{\"ok\":false,\"error_code\":429,\"parameters\":{\"retry_after\":1}}".into(),
                )
            } else {
                ("200 OK", "{\"ok\":true}".into())
            }
        })
    }

    /// Answers the `count`th request (from 1), whose request line is given,
    /// with the status line and JSON body `answer` returns.
    pub(crate) fn answering(
        answer: impl Fn(usize, &str) -> (&'static str, String) + Send + 'static,
    ) -> TelegramStub {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind loopback");
        let base = format!("http://{}", listener.local_addr().expect("local addr"));
        let requests = Arc::new(Mutex::new(Vec::new()));
        let seen = requests.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let mut reader = BufReader::new(stream);
                let mut head = String::new();
                let mut length = 0usize;
                loop {
                    let mut line = String::new();
                    if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
                        break;
                    }
                    if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                        length = v.trim().parse().unwrap_or(0);
                    }
                    head.push_str(&line);
                }
                if head.is_empty() {
                    continue;
                }
                let mut body = vec![0u8; length];
                let _ = reader.read_exact(&mut body);
                let count = {
                    let mut seen = seen.lock().unwrap();
                    seen.push(format!("{head}\n{}", String::from_utf8_lossy(&body)));
                    seen.len()
                };
                let request_line = head.lines().next().unwrap_or_default();
                let (status, reply) = answer(count, request_line);
                let _ = write!(
                    reader.get_mut(),
                    "HTTP/1.1 {status}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{reply}",
                    reply.len()
                );
            }
        });
        TelegramStub { base, requests }
    }

    /// Every request received so far: request line, headers, blank line, body.
    pub(crate) fn requests(&self) -> Vec<String> {
        self.requests.lock().unwrap().clone()
    }
}
