//! The error type every command returns to `main`, and its exit code: 2 for
//! a usage or configuration mistake, 3 for a held instance lock, 1 for
//! anything that went wrong while running. This module only classifies; it
//! never prints.

use std::fmt;

/// What went wrong, sorted by who has to act on it.
#[derive(Debug)]
pub enum Error {
    /// The command line or the environment is wrong: exit 2.
    Usage(String),
    /// Another watchdog holds the instance lock: exit 3.
    Locked(String),
    /// Something failed at run time: exit 1.
    Runtime(String),
}

impl Error {
    pub fn usage(msg: impl Into<String>) -> Error {
        Error::Usage(msg.into())
    }

    pub fn runtime(msg: impl Into<String>) -> Error {
        Error::Runtime(msg.into())
    }

    /// The process exit code for this error.
    pub fn exit_code(&self) -> i32 {
        match self {
            Error::Usage(_) => 2,
            Error::Locked(_) => 3,
            Error::Runtime(_) => 1,
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Usage(m) | Error::Locked(m) | Error::Runtime(m) => f.write_str(m),
        }
    }
}

impl std::error::Error for Error {}

pub(crate) type Result<T> = std::result::Result<T, Error>;
