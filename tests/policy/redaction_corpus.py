"""Credentials of many kinds, each in a realistic line, and benign text that must survive scrubbing.

Each entry is ``(kind, text, secret)``: after scrubbing, ``secret`` must not appear. Values are
fabricated (right shape, no real account behind them).
"""

from __future__ import annotations

H32 = "0123456789abcdef0123456789abcdef"
H40 = "a94a8fe5ccb19ba61c4c0873d391e987982fbbd3"
A36 = "R2d2C3poBb8Ee7Ff6Gg5Hh4Ii3Jj2Kk1Ll0Mm"
B64_88 = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
JWT = (
    "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4gRG9lIn0"
    ".SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c"
)
PEM_BODY = "MIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo4lgOEePzNm0tRgeLezV6ffAt0gun\nVTLw7onLRnrq0/IzW7yWR7QkrmBL7jTKEn5u+qKhbwKfBstIs+bMY2Zkp18gnTxK\n"

CREDENTIALS: list[tuple[str, str, str]] = [
    ("aws_access_key_id", "aws_access_key_id = AKIAIOSFODNN7EXAMPLE", "AKIAIOSFODNN7EXAMPLE"),
    ("aws_sts_key_id", "temporary key ASIAY34FZKBOKMUTVV7A in use", "ASIAY34FZKBOKMUTVV7A"),
    (
        "aws_secret_access_key",
        "aws_secret_access_key=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
        "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    ),
    (
        "aws_secret_in_code",
        'client = boto3.client("s3", aws_secret_access_key="wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY")',
        "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    ),
    (
        "aws_session_token",
        "AWS_SESSION_TOKEN=IQoJb3JpZ2luX2VjEJr//////////wEaCXVzLWVhc3QtMSJHMEUCIQ",
        "IQoJb3JpZ2luX2VjEJr//////////wEaCXVzLWVhc3QtMSJHMEUCIQ",
    ),
    (
        "gcp_api_key",
        "maps key AIzaSyA1234567890abcdefghijklmnopqrstuv",
        "AIzaSyA1234567890abcdefghijklmnopqrstuv",
    ),
    (
        "gcp_oauth_access_token",
        "Authorization uses ya29.a0AfH6SMBx3kq9ZQvLr8s7T2uVwXyZ0123456789",
        "ya29.a0AfH6SMBx3kq9ZQvLr8s7T2uVwXyZ0123456789",
    ),
    (
        "gcp_oauth_client_secret",
        "client secret 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",
        "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",
    ),
    (
        "gcp_service_account_key",
        '{"type": "service_account", "private_key": "-----BEGIN PRIVATE KEY-----\\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC\\n-----END PRIVATE KEY-----\\n"}',
        "MIIEvQIBADANBgkqhkiG9w0BAQEFAASC",
    ),
    (
        "github_pat_classic",
        "token ghp_16C7e42F292c6912E7710c838347Ae178B4a",
        "ghp_16C7e42F292c6912E7710c838347Ae178B4a",
    ),
    (
        "github_oauth",
        "gho_16C7e42F292c6912E7710c838347Ae178B4a used by the app",
        "gho_16C7e42F292c6912E7710c838347Ae178B4a",
    ),
    (
        "github_user_to_server",
        "ghu_16C7e42F292c6912E7710c838347Ae178B4a",
        "ghu_16C7e42F292c6912E7710c838347Ae178B4a",
    ),
    (
        "github_server_to_server",
        "ghs_16C7e42F292c6912E7710c838347Ae178B4a",
        "ghs_16C7e42F292c6912E7710c838347Ae178B4a",
    ),
    (
        "github_refresh",
        "ghr_16C7e42F292c6912E7710c838347Ae178B4a",
        "ghr_16C7e42F292c6912E7710c838347Ae178B4a",
    ),
    (
        "github_fine_grained",
        "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyzABCDEF",
        "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyzABCDEF",
    ),
    ("gitlab_pat", "glpat-xxxxxxxxxxxxxxxxxxxx1234 for CI", "glpat-xxxxxxxxxxxxxxxxxxxx1234"),
    ("gitlab_runner", "glrt-2CR8_eVxiioB1QmzPZwa7Kqy", "glrt-2CR8_eVxiioB1QmzPZwa7Kqy"),
    ("gitlab_deploy_token", "gldt-ABCDEFGHIJKLMNOPQRSTUVWX", "gldt-ABCDEFGHIJKLMNOPQRSTUVWX"),
    (
        "openai_legacy",
        "sk-abcdefghijklmnopqrstT3BlbkFJabcdefghijklmnopqrst",
        "sk-abcdefghijklmnopqrstT3BlbkFJabcdefghijklmnopqrst",
    ),
    (
        "openai_project",
        "OPENAI_API_KEY=sk-proj-abcdefghijklmnopqrstuvwxyz123456",
        "sk-proj-abcdefghijklmnopqrstuvwxyz123456",
    ),
    (
        "openai_service_account",
        "sk-svcacct-AbCdEfGhIjKlMnOpQrStUvWxYz012345",
        "sk-svcacct-AbCdEfGhIjKlMnOpQrStUvWxYz012345",
    ),
    (
        "anthropic",
        "anthropic key sk-ant-api03-abcdefghijklmnopqrstuvwxyz0123456789-ABCDEF",
        "sk-ant-api03-abcdefghijklmnopqrstuvwxyz0123456789-ABCDEF",
    ),
    (
        "anthropic_admin",
        "sk-ant-admin01-abcdefghijklmnopqrstuvwxyz0123456789",
        "sk-ant-admin01-abcdefghijklmnopqrstuvwxyz0123456789",
    ),
    ("jwt", f"id_token {JWT}", JWT),
    ("jwt_in_header", f"Authorization: Bearer {JWT}", JWT),
    ("stripe_secret_live", "sk_live_4eC39HqLyjWDarjtT1zdp7dc", "sk_live_4eC39HqLyjWDarjtT1zdp7dc"),
    ("stripe_secret_test", "sk_test_4eC39HqLyjWDarjtT1zdp7dc", "sk_test_4eC39HqLyjWDarjtT1zdp7dc"),
    ("stripe_restricted", "rk_live_51H8abcdEFGHijklMNOPqrst", "rk_live_51H8abcdEFGHijklMNOPqrst"),
    (
        "stripe_webhook_secret",
        "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
        "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
    ),
    ("twilio_account_sid", f"AC{H32} is the account", f"AC{H32}"),
    ("twilio_api_key", f"SK{H32}", f"SK{H32}"),
    ("twilio_auth_token", f"TWILIO_AUTH_TOKEN={H32}", H32),
    (
        "sendgrid",
        "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",
        "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",
    ),
    ("npm_token", f"npm_{A36}", f"npm_{A36}"),
    (
        "npmrc_auth",
        "//registry.npmjs.org/:_authToken=npm_abcdefghijklmnopqrstuvwxyz0123456789",
        "npm_abcdefghijklmnopqrstuvwxyz0123456789",
    ),
    (
        "pypi_token",
        "pypi-AgEIcHlwaS5vcmcCJGE4ZjY0ZTk0LTE2ZmYtNDc4Mi05OGRmLTg3ZjFmMjE3ZjA1YwACKlszLCJmZjE5NDZmZS04MzQ",
        "pypi-AgEIcHlwaS5vcmcCJGE4ZjY0ZTk0LTE2ZmYtNDc4Mi05OGRmLTg3ZjFmMjE3ZjA1YwACKlszLCJmZjE5NDZmZS04MzQ",
    ),
    (
        "pem_rsa",
        f"-----BEGIN RSA PRIVATE KEY-----\n{PEM_BODY}-----END RSA PRIVATE KEY-----",
        "MIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo4lgOEePzNm0tRgeLezV6ffAt0gun",
    ),
    (
        "pem_pkcs8",
        f"-----BEGIN PRIVATE KEY-----\n{PEM_BODY}-----END PRIVATE KEY-----",
        "VTLw7onLRnrq0/IzW7yWR7QkrmBL7jTKEn5u+qKhbwKfBstIs+bMY2Zkp18gnTxK",
    ),
    (
        "pem_ec",
        f"-----BEGIN EC PRIVATE KEY-----\n{PEM_BODY}-----END EC PRIVATE KEY-----",
        "MIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo4lgOEePzNm0tRgeLezV6ffAt0gun",
    ),
    (
        "pem_encrypted",
        f"-----BEGIN ENCRYPTED PRIVATE KEY-----\n{PEM_BODY}-----END ENCRYPTED PRIVATE KEY-----",
        "MIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo4lgOEePzNm0tRgeLezV6ffAt0gun",
    ),
    (
        "openssh_private_key",
        "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW\n-----END OPENSSH PRIVATE KEY-----",
        "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW",
    ),
    (
        "pgp_private_key_block",
        "-----BEGIN PGP PRIVATE KEY BLOCK-----\n\nlQOYBF0V9xYBCADGuPk4ywO8ziF2UojP8Q9wZy1y\n=Xt7p\n-----END PGP PRIVATE KEY BLOCK-----",
        "lQOYBF0V9xYBCADGuPk4ywO8ziF2UojP8Q9wZy1y",
    ),
    (
        "truncated_private_key",
        "key pasted: -----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo4lgO",
        "MIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo4lgO",
    ),
    (
        "putty_key",
        "PuTTY-User-Key-File-2: ssh-rsa\nEncryption: none\nPrivate-Lines: 1\nAAAAgQC7Vv3Mzm5wqX2yTgLrq8Z\n",
        "AAAAgQC7Vv3Mzm5wqX2yTgLrq8Z",
    ),
    (
        "age_secret_key",
        "AGE-SECRET-KEY-1QYQSZQGPQYQSZQGPQYQSZQGPQYQSZQGPQYQSZQGPQYQSZQGPQYQSZQGP",
        "AGE-SECRET-KEY-1QYQSZQGPQYQSZQGPQYQSZQGPQYQSZQGPQYQSZQGPQYQSZQGPQYQSZQGP",
    ),
    ("basic_auth_url", "clone https://alice:s3cretpass@git.example.com/repo.git", "s3cretpass"),
    ("postgres_url", "DATABASE_URL=postgres://admin:hunter22pass@db.internal:5432/prod", "hunter22pass"),
    ("mysql_url", "mysql://root:Rootpw_2024@10.0.0.5/app", "Rootpw_2024"),
    ("mongodb_srv_url", "mongodb+srv://app:Mongo-Pw-99@cluster0.mongodb.net/db", "Mongo-Pw-99"),
    ("redis_url_no_user", "cache at redis://:r3d1sP4ss@cache.internal:6379/0", "r3d1sP4ss"),
    ("amqp_url", "amqp://guest:Rabbit_pw1@mq.internal:5672/", "Rabbit_pw1"),
    ("ftp_url", "ftp://upload:Ftp-Secret-7@files.example.com/in", "Ftp-Secret-7"),
    (
        "azure_storage_connection",
        f"DefaultEndpointsProtocol=https;AccountName=acct;AccountKey={B64_88};EndpointSuffix=core.windows.net",
        B64_88,
    ),
    (
        "azure_storage_key_short",
        "AccountKey=abcdEFGH1234ijklMNOP5678qrst==",
        "abcdEFGH1234ijklMNOP5678qrst==",
    ),
    (
        "azure_sas_sig",
        "https://acct.blob.core.windows.net/c/f?sv=2021-06-08&se=2026-01-01&sr=b&sp=r&sig=Zp%2BHk3Jq9fXbE2wq5r7T8v%3D",
        "Zp%2BHk3Jq9fXbE2wq5r7T8v%3D",
    ),
    (
        "azure_service_bus",
        "Endpoint=sb://ns.servicebus.windows.net/;SharedAccessKeyName=Root;SharedAccessKey=Qm9vTXlTZWNyZXRLZXlGb3JTQg1234=",
        "Qm9vTXlTZWNyZXRLZXlGb3JTQg1234=",
    ),
    ("password_phrase", "by the way, the password is Tr0ub4dor&3 for the wifi", "Tr0ub4dor&3"),
    ("password_phrase_was", "Her password was hunter2hunter", "hunter2hunter"),
    ("passphrase_colon", "passphrase: correct-horse-battery-staple", "correct-horse-battery-staple"),
    ("passphrase_plain", "gpg passphrase MyLongPassPhrase42", "MyLongPassPhrase42"),
    ("password_assignment", "password=Sup3rS3cret!", "Sup3rS3cret!"),
    ("password_json", '{"user": "bob", "password": "pa55w0rd-for-bob"}', "pa55w0rd-for-bob"),
    ("password_yaml", "db:\n  password: yaml-Secret-123\n", "yaml-Secret-123"),
    ("pin_phrase", "The PIN is 48213 for the door", "48213"),
    (
        "slack_bot",
        "xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx",
        "xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx",
    ),
    (
        "slack_user",
        "xoxp-123456789012-123456789012-123456789012-0123456789abcdef0123456789abcdef",
        "xoxp-123456789012-123456789012-123456789012-0123456789abcdef0123456789abcdef",
    ),
    (
        "slack_app_token",
        "SLACK_APP_TOKEN=xapp-1-A0123456789-1234567890123-abcdef0123456789abcdef",
        "xapp-1-A0123456789-1234567890123-abcdef0123456789abcdef",
    ),
    (
        "slack_app_token_bare",
        "socket mode with xapp-1-A0123456789-1234567890123-abcdef0123456789abcdef",
        "xapp-1-A0123456789-1234567890123-abcdef0123456789abcdef",
    ),
    (
        "slack_webhook",
        "https://hooks.slack.com/services/T00000000/B00000000/XXXXXXXXXXXXXXXXXXXXXXXX",
        "XXXXXXXXXXXXXXXXXXXXXXXX",
    ),
    (
        "telegram_bot_url",
        "https://api.telegram.org/bot123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw4/sendMessage",
        "AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw4",
    ),
    (
        "telegram_bot_token",
        "TELEGRAM=123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw4",
        "AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw4",
    ),
    (
        "discord_webhook",
        "https://discord.com/api/webhooks/123456789012345678/AbCdEfGhIjKlMnOpQrStUvWxYz0123456789-_abcdEFGH",
        "AbCdEfGhIjKlMnOpQrStUvWxYz0123456789-_abcdEFGH",
    ),
    (
        "discordapp_webhook",
        "https://discordapp.com/api/webhooks/123456789012345678/ZyXwVuTsRqPoNmLkJiHgFeDcBa9876543210",
        "ZyXwVuTsRqPoNmLkJiHgFeDcBa9876543210",
    ),
    (
        "discord_bot_token",
        "MTk4NjIyNDgzNDcxOTI1MjQ4.Cl2FMQ.ZnCjm1XVW7vRze4b7Cq4se7kKWs",
        "MTk4NjIyNDgzNDcxOTI1MjQ4.Cl2FMQ.ZnCjm1XVW7vRze4b7Cq4se7kKWs",
    ),
    ("netrc_one_line", "machine api.example.com login alice password n3trcS3cret", "n3trcS3cret"),
    ("netrc_multi_line", "machine api.example.com\n  login alice\n  password n3trcS3cret2\n", "n3trcS3cret2"),
    ("mysql_dash_p", "mysql -u root -pMyS3cretPw -h db.internal prod", "MyS3cretPw"),
    ("mysqldump_dash_p", "mysqldump -uadmin -pDump_Pw_77 shop > shop.sql", "Dump_Pw_77"),
    ("mysql_long_option", "mysql --user=root --password=LongOptPw9 shop", "LongOptPw9"),
    ("pgpassword_env", "PGPASSWORD=pgPw_12345 psql -h db -U app", "pgPw_12345"),
    ("redis_cli_auth", "redis-cli -h cache -a R3disCliPw ping", "R3disCliPw"),
    ("sshpass", "sshpass -p 'SshPassPw1' ssh deploy@host", "SshPassPw1"),
    (
        "query_key",
        "GET https://api.example.com/v1/data?key=AbC123dEf456GhI789&format=json",
        "AbC123dEf456GhI789",
    ),
    ("query_api_key", "https://maps.example.com/geo?q=paris&api_key=k3y-Val-9988", "k3y-Val-9988"),
    (
        "query_access_token",
        "callback#state=1&access_token=at_9f8e7d6c5b4a&expires_in=3600",
        "at_9f8e7d6c5b4a",
    ),
    ("query_token", "https://hooks.example.com/notify?token=tok_1234567890abcdef", "tok_1234567890abcdef"),
    (
        "query_signature",
        "https://bucket.s3.amazonaws.com/obj?X-Amz-Credential=AKIAEXAMPLE%2F20260101&X-Amz-Signature=3f2a1b0c9d8e7f6a5b4c3d2e1f0a9b8c",
        "3f2a1b0c9d8e7f6a5b4c3d2e1f0a9b8c",
    ),
    ("query_client_secret", "POST /token?client_id=app&client_secret=cs_live_42abcdef", "cs_live_42abcdef"),
    (
        "http_digest_response",
        'Authorization: Digest username="bob", realm="api", nonce="dcd98b7102dd2f0e8b11d0f600bfb0c093", uri="/", response="6629fae49393a05397450978507c4ef1"',
        "6629fae49393a05397450978507c4ef1",
    ),
    ("http_basic_header", "Authorization: Basic YWxhZGRpbjpvcGVuc2VzYW1l", "YWxhZGRpbjpvcGVuc2VzYW1l"),
    ("http_bearer_header", "Authorization: Bearer abcdef0123456789abcdef", "abcdef0123456789abcdef"),
    ("x_api_key_header", "X-Api-Key: 9d8c7b6a5f4e3d2c1b0a", "9d8c7b6a5f4e3d2c1b0a"),
    ("cookie_header", "Cookie: sessionid=38afes7a8; csrftoken=Zx9Yw8Vu7", "38afes7a8"),
    (
        "set_cookie_session",
        "Set-Cookie: session=eyJ1c2VyIjoiYm9iIn0.Zk3PQw.abcDEF; HttpOnly",
        "eyJ1c2VyIjoiYm9iIn0.Zk3PQw.abcDEF",
    ),
    (
        "huggingface",
        "HF_TOKEN=hf_AbCdEfGhIjKlMnOpQrStUvWxYz01234567",
        "hf_AbCdEfGhIjKlMnOpQrStUvWxYz01234567",
    ),
    ("digitalocean", "dop_v1_" + "a1" * 32, "dop_v1_" + "a1" * 32),
    ("shopify", "shpat_" + H32, "shpat_" + H32),
    (
        "square_oauth_secret",
        "sq0csp-ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopq",
        "sq0csp-ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopq",
    ),
    ("square_access", "sq0atp-ABCDEFGHIJKLMNOPQRSTUV", "sq0atp-ABCDEFGHIJKLMNOPQRSTUV"),
    (
        "vault_token",
        "VAULT_TOKEN=hvs.CAESIJlU4X2yZ3Qz8k1aBcDeFgHiJkLmNoPq",
        "hvs.CAESIJlU4X2yZ3Qz8k1aBcDeFgHiJkLmNoPq",
    ),
    (
        "doppler",
        "dp.st.dev.AbCdEfGhIjKlMnOpQrStUvWxYz0123456789",
        "dp.st.dev.AbCdEfGhIjKlMnOpQrStUvWxYz0123456789",
    ),
    ("databricks", "dapi" + H32, "dapi" + H32),
    ("linear", "lin_api_" + "Ab" * 20, "lin_api_" + "Ab" * 20),
    ("postman", "PMAK-" + "a" * 24 + "-" + "b" * 34, "PMAK-" + "a" * 24 + "-" + "b" * 34),
    ("grafana_cloud", "glc_" + "Ab1" * 12, "glc_" + "Ab1" * 12),
    ("newrelic", "NRAK-ABCDEFGHIJKLMNOPQRSTUVWXYZ1", "NRAK-ABCDEFGHIJKLMNOPQRSTUVWXYZ1"),
    ("mailgun", "key-" + H32, "key-" + H32),
    ("mailchimp", "0123456789abcdef0123456789abcdef-us12", "0123456789abcdef0123456789abcdef-us12"),
    (
        "mapbox_secret",
        "sk.eyJ1IjoibWFwYm94IiwiYSI6ImNrMTIzNDU2Nzg5MCJ9.AbCdEfGhIjKlMnOp",
        "sk.eyJ1IjoibWFwYm94IiwiYSI6ImNrMTIzNDU2Nzg5MCJ9.AbCdEfGhIjKlMnOp",
    ),
    ("alibaba", "LTAI5tAbCdEfGhIjKlMnOp", "LTAI5tAbCdEfGhIjKlMnOp"),
    ("terraform_cloud", "abcdefghijklmn.atlasv1." + "Z" * 64, "abcdefghijklmn.atlasv1." + "Z" * 64),
    ("rubygems", "rubygems_" + "ab" * 24, "rubygems_" + "ab" * 24),
    (
        "sentry_dsn",
        "SENTRY_DSN=https://0123456789abcdef0123456789abcdef@o123456.ingest.sentry.io/42",
        "0123456789abcdef0123456789abcdef",
    ),
    (
        "sentry_auth",
        "sntrys_eyJpYXQiOjE2ODQ4OTI0MDAuMCwidXJsIjoiaHR0cHM6Ly9zZW50cnkuaW8i",
        "sntrys_eyJpYXQiOjE2ODQ4OTI0MDAuMCwidXJsIjoiaHR0cHM6Ly9zZW50cnkuaW8i",
    ),
    ("brevo", "xkeysib-" + "a" * 64 + "-AbCdEfGhIjKlMnOp", "xkeysib-" + "a" * 64 + "-AbCdEfGhIjKlMnOp"),
    (
        "artifactory",
        "artifactory key AKCp8jRRiQSAbghbuZmHKZcaKGEqbAASGH2SAb3rxXJQsSq9dGga8gFXe6aHpcRmzuHxN6oaT",
        "AKCp8jRRiQSAbghbuZmHKZcaKGEqbAASGH2SAb3rxXJQsSq9dGga8gFXe6aHpcRmzuHxN6oaT",
    ),
    ("client_secret_pair", "client_secret: 8Q~abcDEF.ghiJKL_mnoPQR", "8Q~abcDEF.ghiJKL_mnoPQR"),
    ("api_key_pair_quoted", "api_key = '7f3a9c0e11d2b4c5'", "7f3a9c0e11d2b4c5"),
    (
        "secret_key_env",
        "DJANGO_SECRET_KEY=django-insecure-9x8y7z6w5v4u3t2s1r",
        "django-insecure-9x8y7z6w5v4u3t2s1r",
    ),
    ("private_token_header", "PRIVATE-TOKEN: glpat-ABCDEFGHIJKLMNOPQRST", "glpat-ABCDEFGHIJKLMNOPQRST"),
    (
        "docker_auth",
        '{"auths": {"registry.example.com": {"auth": "dXNlcjpwYXNzd29yZDEyMw=="}}}',
        "dXNlcjpwYXNzd29yZDEyMw==",
    ),
    (
        "kube_token",
        "token: eyJhbGciOiJSUzI1NiIsImtpZCI6IiJ9.eyJpc3MiOiJrdWJlcm5ldGVzIn0.c2lnbmF0dXJlc2lnbmF0dXJl",
        "eyJhbGciOiJSUzI1NiIsImtpZCI6IiJ9.eyJpc3MiOiJrdWJlcm5ldGVzIn0.c2lnbmF0dXJlc2lnbmF0dXJl",
    ),
    ("encryption_key_pair", "ENCRYPTION_KEY=3q2+7w==ab12cd34ef56", "3q2+7w==ab12cd34ef56"),
    ("credential_in_python_kwargs", "connect(host='db', passwd='Pyth0nPw!')", "Pyth0nPw!"),
    ("json_escaped_in_string", '"{\\"token\\": \\"tok-9a8b7c6d5e4f\\"}"', "tok-9a8b7c6d5e4f"),
    ("dsn_pair", "dsn: postgresql://svc:Dsn_Pw_44@pg/app", "Dsn_Pw_44"),
]

BENIGN = [
    "User prefers Rust and dark mode.",
    "Our password policy requires 12 characters and a symbol.",
    "The password is stored in the vault under prod/db.",
    "Reset your password from the account page.",
    "Meeting at 10:30 in room B; bring the quarterly report.",
    "Use curl https://example.com/health to check the service.",
    "The build took 3m42s on commit 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b.",
    "Visit https://docs.example.com/guide?page=2&lang=en for details.",
    "SELECT id, name FROM users WHERE created_at > now() - interval '7 days';",
    "def add(a, b):\n    return a + b",
    "Timezone is Europe/Madrid; prefers email over Slack.",
    "La contraseña se cambia cada 90 días.",
    "Пользователь предпочитает короткие ответы.",
    "用户喜欢简洁的回答。",
    "The token bucket refills at 10 requests per second.",
    "Authors: Alice Smith and Bob Jones.",
    "Flight BA2490 departs 07:45 from LHR terminal 5.",
    "Request id 3fa85f64-5717-4562-b3fc-2c963f66afa6 failed with 502.",
    "git push origin main && npm test",
    "The secret to good bread is a long cold ferment.",
    "sk-learn is a common misspelling of scikit-learn.",
    "Monitoring: https://grafana.example.com/d/abc123/overview",
    "Budget is $1,200 for the offsite.",
    "Emoji: 🎉🚀 release day",
    "key: user_msg_0123456789abcdef was saved",
    "tokens used: 1532 input, 210 output",
    "The author field is required.",
]
