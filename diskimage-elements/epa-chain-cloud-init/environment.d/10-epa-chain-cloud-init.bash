# Chain nodes boot with a config drive (the templates set config_drive:
# true); ConfigDrive alone avoids waiting for a metadata service.
export DIB_CLOUD_INIT_DATASOURCES=${DIB_CLOUD_INIT_DATASOURCES:-"ConfigDrive"}
# The user cloud-init creates for the metadata's SSH key.
export DIB_EPA_LOGIN_USER=${DIB_EPA_LOGIN_USER:-epa}
