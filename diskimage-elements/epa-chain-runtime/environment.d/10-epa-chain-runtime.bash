# 1: the runtime is the guest's only agent (no cloud-init in the image):
# it sets the host name, the management NIC's address and the metadata's
# SSH keys for DIB_EPA_LOGIN_USER (--manage-guest --login-user). 0 leaves
# that to cloud-init, if the image has it (epa-chain-guest-access README).
export DIB_EPA_MANAGE_GUEST=${DIB_EPA_MANAGE_GUEST:-1}
# Extra arguments for "python3 -m epa_chain.vnf_runtime run", after those.
export DIB_EPA_RUNTIME_ARGS=${DIB_EPA_RUNTIME_ARGS:-}
