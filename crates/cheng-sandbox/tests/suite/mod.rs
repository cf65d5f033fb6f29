mod jail;
