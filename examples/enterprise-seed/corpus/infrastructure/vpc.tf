# Production VPC (synthetic example)
resource "aws_vpc" "prod" {
  cidr_block           = "10.40.0.0/16"
  enable_dns_hostnames = true
}

resource "aws_subnet" "private_b" {
  vpc_id            = aws_vpc.prod.id
  cidr_block        = "10.40.32.0/19"
  availability_zone = "eu-west-1b"
}
