//! `smolsweep prune|reap|stop|plan|apply|history`.
