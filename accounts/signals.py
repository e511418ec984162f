from django.dispatch import Signal

# Sent after a user's new password is saved (any way: the password page, the admin, a command), with
# `user`. Receivers end what the old password let in: API tokens (accounts), open sockets (chat).
password_changed = Signal()
