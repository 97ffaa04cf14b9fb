# The one log-in user of a chain node: created at build time, locked
# password, passwordless sudo. The VNF runtime (--manage-guest --login-user)
# adds the instance metadata's SSH keys to its authorized_keys at boot.
export DIB_EPA_LOGIN_USER=${DIB_EPA_LOGIN_USER:-epa}
