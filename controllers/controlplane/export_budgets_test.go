package controlplane

import "time"

// ShiftBudgetClock moves the clock of budget windows by d (0 puts it back).
func ShiftBudgetClock(d time.Duration) { budgetOffset.Store(int64(d)) }
