//! How a closed vocabulary is written: one enum and one const table, a row per value. The first
//! cell of a row is the value's stable string (what JSON and the tables upstream read); the
//! rest is whatever the vocabulary says of it (a product, a label, a rule), read through
//! accessors over `row()`. A new value is one new row.

/// A closed enum and its table. Every value is serialised as its stable string, parsed back
/// from it (an unknown string is an error), shown as it and compared with it:
///
/// ```ignore
/// closed_table! {
///     /// What a thing is.
///     pub enum Thing ("thing") -> (Product, &'static str) {
///         A => "smolvm.a", (Product::Smolvm, "an a");
///     }
/// }
/// ```
macro_rules! closed_table {
    (
        $(#[$meta:meta])*
        $vis:vis enum $name:ident ($noun:literal) -> ($($col:ty),* $(,)?) {
            $($(#[$vmeta:meta])* $v:ident => $id:literal, ($($cell:expr),* $(,)?);)*
        }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        $vis enum $name { $($(#[$vmeta])* $v,)* }

        impl $name {
            /// Every value, in table order.
            pub const ALL: &'static [$name] = &[$($name::$v,)*];

            /// The stable string, as serialised.
            pub const fn as_str(self) -> &'static str {
                match self {
                    $($name::$v => $id,)*
                }
            }

            /// The value a stable string names.
            pub fn parse(s: &str) -> Option<$name> {
                $name::ALL.iter().copied().find(|v| v.as_str() == s)
            }

            /// The rest of the value's row.
            const fn row(self) -> ($($col,)*) {
                match self {
                    $($name::$v => ($($cell,)*),)*
                }
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
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

        impl serde::Serialize for $name {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(self.as_str())
            }
        }

        impl<'de> serde::Deserialize<'de> for $name {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<$name, D::Error> {
                let s = <String as serde::Deserialize>::deserialize(d)?;
                $name::parse(&s).ok_or_else(|| {
                    <D::Error as serde::de::Error>::custom(format!("unknown {} '{s}'", $noun))
                })
            }
        }
    };
}

pub(crate) use closed_table;
