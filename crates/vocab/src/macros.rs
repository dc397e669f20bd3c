//! `stable_codes!`: one definition of an enum whose variants are stable strings.

/// Defines a `Copy` enum whose every variant has a stable string, with `as_str()`,
/// `ALL` (every variant, in declaration order), `Display` and `FromStr`.
macro_rules! stable_codes {
    (
        $(#[$meta:meta])*
        pub enum $name:ident {
            $( $(#[$vmeta:meta])* $variant:ident => $code:literal, )+
        }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum $name {
            $( $(#[$vmeta])* $variant, )+
        }

        impl $name {
            /// Every variant, in declaration order.
            pub const ALL: &'static [$name] = &[ $( $name::$variant, )+ ];

            /// The stable string (part of the API: never change one).
            pub const fn as_str(self) -> &'static str {
                match self {
                    $( $name::$variant => $code, )+
                }
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl std::str::FromStr for $name {
            type Err = $crate::UnknownCode;
            fn from_str(s: &str) -> Result<Self, Self::Err> {
                match s {
                    $( $code => Ok($name::$variant), )+
                    other => Err($crate::UnknownCode(other.to_string())),
                }
            }
        }

        impl From<$name> for &'static str {
            fn from(c: $name) -> &'static str {
                c.as_str()
            }
        }

        impl PartialEq<str> for $name {
            fn eq(&self, other: &str) -> bool {
                self.as_str() == other
            }
        }

        impl PartialEq<&str> for $name {
            fn eq(&self, other: &&str) -> bool {
                self.as_str() == *other
            }
        }

        impl PartialEq<$name> for str {
            fn eq(&self, other: &$name) -> bool {
                self == other.as_str()
            }
        }

        impl PartialEq<$name> for &str {
            fn eq(&self, other: &$name) -> bool {
                *self == other.as_str()
            }
        }

        impl PartialEq<$name> for String {
            fn eq(&self, other: &$name) -> bool {
                self == other.as_str()
            }
        }
    };
}
