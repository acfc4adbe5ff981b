"""The write path: the client (coordinator), options, operations, plan, task writer, handles,
conflict resolution at commit, markers, locks and rollback of failed writes."""
