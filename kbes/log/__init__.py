"""What people do with the event log: read an article's history, audit citations against it,
export it, and import a folder into it. The log itself is kept by `kbes.store`."""
