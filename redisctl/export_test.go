package redisctl

// SetRemindUnbound turns Failover's MEETs of nodes left serving none of the shard's slots on or
// off (remindUnbound), for a measurement that compares both, and returns the previous setting.
func SetRemindUnbound(on bool) bool {
	prev := remindUnbound
	remindUnbound = on
	return prev
}
