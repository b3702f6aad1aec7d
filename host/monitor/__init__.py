# The monitor: loop (connect, back-fill, reconnect), store (SQLite), status (what the views
# show), names (numbers as words), views (tui, plain), export and stats (read the store).
