//! [`Memo`]: where a caller keeps what it made of a local program — its prepared native code —
//! so that a time loop prepares each stage's local program once instead of looking it up by
//! its structure every step.

use std::any::Any;
use std::sync::{Arc, Mutex};

/// One value of any type, kept with a local program for the caller's next runs of it.
#[derive(Default)]
pub struct Memo(Mutex<Option<Arc<dyn Any + Send + Sync>>>);

impl Memo {
    /// The kept value if it is a `T` that is still `valid`, else `make`'s (kept for next time).
    ///
    /// # Errors
    /// `make`'s.
    pub fn get_or_try<T: Any + Send + Sync, E>(
        &self,
        valid: impl Fn(&T) -> bool,
        make: impl FnOnce() -> Result<T, E>,
    ) -> Result<Arc<T>, E> {
        let mut kept = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(v) = kept.clone().and_then(|v| v.downcast::<T>().ok()).filter(|v| valid(v)) {
            return Ok(v);
        }
        let made = Arc::new(make()?);
        *kept = Some(made.clone());
        Ok(made)
    }
}

impl Clone for Memo {
    /// A clone starts empty (what is kept belongs to the program it was made for).
    fn clone(&self) -> Self {
        Memo::default()
    }
}

impl std::fmt::Debug for Memo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let kept = self.0.lock().map(|k| k.is_some()).unwrap_or(false);
        f.debug_struct("Memo").field("kept", &kept).finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_value_is_made_once_while_valid() {
        let memo = Memo::default();
        let mut made = 0;
        for want in [1, 1, 2, 2] {
            let v = memo
                .get_or_try(
                    |v: &i32| *v == want,
                    || {
                        made += 1;
                        Ok::<_, ()>(want)
                    },
                )
                .unwrap();
            assert_eq!(*v, want);
        }
        assert_eq!(made, 2);
        // Another type is made anew.
        assert_eq!(*memo.get_or_try(|_: &u8| true, || Ok::<_, ()>(7u8)).unwrap(), 7);
    }
}
