//! One way to give an enum the strings it is written as: [`spelled!`]. A
//! leaf: it imports nothing of the crate.

/// An enum whose variants are spelled `Variant = "text"` (the serde name,
/// as the files and the CLI spell it), with `as_str`, `Display` (which
/// honours width) and comparison with that text. The caller writes the derives;
/// `unknown => Other` adds an untagged `Other(String)` that reads back a
/// value this version does not write, verbatim.
macro_rules! spelled {
    (
        $(#[$attr:meta])* $vis:vis enum $name:ident {
            $($(#[$vattr:meta])* $variant:ident = $text:literal,)*
        }
        $(unknown => $other:ident)?
    ) => {
        $(#[$attr])*
        $vis enum $name {
            $($(#[$vattr])* #[serde(rename = $text)] $variant,)*
            $(
                /// Read back: a value this version does not write, kept verbatim.
                #[serde(untagged)]
                $other(String),
            )?
        }

        impl $name {
            /// The text as written.
            $vis fn as_str(&self) -> &str {
                match self {
                    $($name::$variant => $text,)*
                    $($name::$other(text) => text,)?
                }
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.pad(self.as_str())
            }
        }

        impl PartialEq<&str> for $name {
            fn eq(&self, text: &&str) -> bool {
                self.as_str() == *text
            }
        }
    };
}
pub(crate) use spelled;
