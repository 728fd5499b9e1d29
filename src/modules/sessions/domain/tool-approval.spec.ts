import { approvalTimeoutSeconds, DEFAULT_APPROVAL_TIMEOUT_SECONDS } from './tool-approval';

describe('approvalTimeoutSeconds', () => {
  it("is the shorter of the organization's and the session's, else the default", () => {
    expect(approvalTimeoutSeconds(undefined, undefined)).toBe(DEFAULT_APPROVAL_TIMEOUT_SECONDS);
    expect(approvalTimeoutSeconds({ timeoutSeconds: 60 }, undefined)).toBe(60);
    expect(approvalTimeoutSeconds({ timeoutSeconds: 60 }, { timeoutSeconds: 5 })).toBe(5);
    // A session cannot lengthen the organization's timeout.
    expect(approvalTimeoutSeconds({ timeoutSeconds: 60 }, { timeoutSeconds: 3600 })).toBe(60);
    expect(approvalTimeoutSeconds({}, { timeoutSeconds: 3600 })).toBe(3600);
  });
});
