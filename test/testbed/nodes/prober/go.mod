module cidr-migration/prober

go 1.22
