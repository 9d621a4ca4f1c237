module github.com/shardkeeper/shardkeeper

go 1.26
