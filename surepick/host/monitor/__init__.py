# The monitor: session (connect/back-fill/reconnect), store (SQLite), model, views.
