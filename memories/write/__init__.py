"""The write side: every change to a memory goes through here (validation, secret scan, poisoning
hold, duplicates, then create / edit; remote applies teammates' events for sync)."""
